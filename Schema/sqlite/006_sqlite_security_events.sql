-- 006: Security Event Tokens received at POST /v1/sets, as PostgreSQL's
-- 010_security_events.sql: how each event arrived, and every accepted SET once per
-- issuer and jti.
ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT 'push' CHECK (source IN ('push', 'set'));

CREATE TABLE security_events (
    number             INTEGER PRIMARY KEY AUTOINCREMENT,
    issuer             TEXT NOT NULL,
    jti                TEXT NOT NULL,
    event_type         TEXT NOT NULL,
    issued_at          INTEGER NOT NULL,              -- microseconds, as every time here
    received_at        INTEGER NOT NULL,
    subject            TEXT,
    fingerprint        BLOB NOT NULL,
    disposition        TEXT NOT NULL CHECK (disposition IN ('event', 'verification', 'ignored', 'unmatched')),
    note               TEXT,
    verification_state TEXT,
    event_id           TEXT UNIQUE REFERENCES events (id) ON DELETE SET NULL,
    UNIQUE (issuer, jti)
) STRICT;
CREATE INDEX security_events_disposition ON security_events (disposition, number);

CREATE INDEX users_phone_number ON users (phone_number) WHERE phone_number IS NOT NULL;
