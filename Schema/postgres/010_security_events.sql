-- 010: Security Event Tokens received at POST /v1/sets (OpenID Shared Signals).
-- Every accepted SET is recorded once under its issuer and jti, the permanent idempotency key,
-- whatever it meant: an update becomes an event (event_id), a verification event keeps its
-- state, and an ignored or unmatched one keeps why, for support.

-- How an event arrived: pushed as JSON (verified with OAuth Echo) or as a SET (verified by
-- its signature). A constant default: no table rewrite.
ALTER TABLE events ADD COLUMN source text NOT NULL DEFAULT 'push' CHECK (source IN ('push', 'set'));

CREATE TABLE security_events (
    number             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- recording order, the list's cursor
    issuer             text NOT NULL,
    jti                text NOT NULL,
    event_type         text NOT NULL,                 -- the event type URI as sent
    issued_at          timestamptz NOT NULL,          -- iat
    received_at        timestamptz NOT NULL DEFAULT now(),
    subject            text,                          -- sub_id or the event's subject, compact JSON
    fingerprint        bytea NOT NULL,                -- SHA-256 of the compact JWS
    disposition        text NOT NULL CHECK (disposition IN ('event', 'verification', 'ignored', 'unmatched')),
    note               text,                          -- why it was ignored or unmatched
    verification_state text,                          -- the state of a verification event
    -- The event it became; kept (as null) if that event is deleted, so the jti stays known.
    event_id           text UNIQUE REFERENCES events (id) ON DELETE SET NULL,
    PRIMARY KEY (issuer, jti)
);
-- Support's list filtered by disposition, newest first (the unfiltered list reads `number`).
CREATE INDEX security_events_disposition ON security_events (disposition, number);

-- A SET whose subject is only a phone number names the user whose verified number it is.
CREATE INDEX users_phone_number ON users (phone_number) WHERE phone_number IS NOT NULL;
