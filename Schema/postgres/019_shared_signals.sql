-- 019: Shared Signals as the interoperability profile asks of a receiver.

-- A polled SET that fails a check is recorded (refused, the note has its RFC 8935 code), and
-- RISC events that say something to support only are recorded as noted.
ALTER TABLE security_events DROP CONSTRAINT security_events_disposition_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_disposition_check
    CHECK (disposition IN ('event', 'verification', 'noted', 'ignored', 'unmatched', 'refused'));

-- Why a session ended (session_revoked, tokens_revoked), for support and in the delivery.
ALTER TABLE events ADD COLUMN reason text;

-- A SET whose subject is only an email address names the user whose verified email it is.
ALTER TABLE users ADD COLUMN email text;
CREATE INDEX users_email ON users (email) WHERE email IS NOT NULL;

-- The stream EchoRelay registered with its transmitter (`echorelay sets stream create`): one
-- at most. A poll stream's endpoint is where the poller reads when ECHORELAY_SET_POLL_URL is
-- not set; the last verification is what `sets stream verify` saw.
CREATE TABLE set_stream (
    singleton                 boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    stream_id                 text NOT NULL,
    delivery                  text NOT NULL CHECK (delivery IN ('push', 'poll')),
    endpoint_url              text NOT NULL,
    configuration             text NOT NULL,      -- the transmitter's answer, compact JSON
    status                    text CHECK (status IN ('enabled', 'paused', 'disabled')),
    status_reason             text,
    status_checked_at         timestamptz,
    verification_state        text,
    verification_requested_at timestamptz,
    verification_outcome      text,               -- passed, wrong_state, missing_state, timed_out
    verification_elapsed_ms   bigint,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now()
);
