-- 012: Shared Signals as the interoperability profile asks of a receiver, as PostgreSQL's
-- 019_shared_signals.sql. SQLite cannot change a CHECK constraint, so security_events is
-- made again with the new dispositions and its rows copied.
CREATE TABLE security_events_019 (
    number             INTEGER PRIMARY KEY AUTOINCREMENT,
    issuer             TEXT NOT NULL,
    jti                TEXT NOT NULL,
    event_type         TEXT NOT NULL,
    issued_at          INTEGER NOT NULL,
    received_at        INTEGER NOT NULL,
    subject            TEXT,
    fingerprint        BLOB NOT NULL,
    disposition        TEXT NOT NULL CHECK (disposition IN ('event', 'verification', 'noted', 'ignored', 'unmatched', 'refused')),
    note               TEXT,
    verification_state TEXT,
    event_id           TEXT UNIQUE REFERENCES events (id) ON DELETE SET NULL,
    UNIQUE (issuer, jti)
) STRICT;
INSERT INTO security_events_019 SELECT * FROM security_events;
DROP TABLE security_events;
ALTER TABLE security_events_019 RENAME TO security_events;
CREATE INDEX security_events_disposition ON security_events (disposition, number);

ALTER TABLE events ADD COLUMN reason TEXT;

ALTER TABLE users ADD COLUMN email TEXT;
CREATE INDEX users_email ON users (email) WHERE email IS NOT NULL;

CREATE TABLE set_stream (
    singleton                 INTEGER PRIMARY KEY DEFAULT 1 CHECK (singleton = 1),
    stream_id                 TEXT NOT NULL,
    delivery                  TEXT NOT NULL CHECK (delivery IN ('push', 'poll')),
    endpoint_url              TEXT NOT NULL,
    configuration             TEXT NOT NULL,
    status                    TEXT CHECK (status IN ('enabled', 'paused', 'disabled')),
    status_reason             TEXT,
    status_checked_at         INTEGER,
    verification_state        TEXT,
    verification_requested_at INTEGER,
    verification_outcome      TEXT,
    verification_elapsed_ms   INTEGER,
    created_at                INTEGER NOT NULL,
    updated_at                INTEGER NOT NULL
) STRICT;
