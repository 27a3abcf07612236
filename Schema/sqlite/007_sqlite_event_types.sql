-- echorelay: foreign keys off
-- 007: the event types come from the code's registry, as PostgreSQL's 011_event_types.sql:
-- the events table loses its CHECK on type, so adding a type needs no migration. SQLite cannot
-- drop a CHECK, so the table is made again (https://www.sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"). The line above has the migrator turn foreign
-- keys off around this file, or dropping the old table would cascade to every delivery, and
-- check them before it commits. events_pending is not made again: events_pending_user (003)
-- is the same index.
CREATE TABLE events_new (
    id                    TEXT PRIMARY KEY,             -- the provider's event id
    user_id               TEXT NOT NULL,
    sequence              INTEGER NOT NULL,             -- per user, from 1, no gaps
    type                  TEXT NOT NULL,                -- a name of EventType.registry
    occurred_at           INTEGER NOT NULL,             -- as the provider says
    received_at           INTEGER NOT NULL,
    fingerprint           BLOB NOT NULL,                -- SHA-256 of the canonical body, for idempotency
    pushed_phone_number   TEXT,                         -- data.phone_number as pushed, not yet trusted
    -- OAuth Echo credentials: erased once the verification outcome is final.
    echo_service_provider TEXT,
    echo_authorization    TEXT,
    status                TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'verified', 'rejected', 'unverifiable')),
    status_reason         TEXT,
    verified_at           INTEGER,
    decided_at            INTEGER,                      -- when the outcome became final
    provider_user_id      TEXT,                         -- id_str as the provider answered
    provider_phone_number TEXT,                         -- phone_number as the provider answered
    source                TEXT NOT NULL DEFAULT 'push' CHECK (source IN ('push', 'set')),  -- 006
    CONSTRAINT events_user_sequence_key UNIQUE (user_id, sequence)
) STRICT;

INSERT INTO events_new (id, user_id, sequence, type, occurred_at, received_at, fingerprint, pushed_phone_number,
                        echo_service_provider, echo_authorization, status, status_reason, verified_at, decided_at,
                        provider_user_id, provider_phone_number, source)
SELECT id, user_id, sequence, type, occurred_at, received_at, fingerprint, pushed_phone_number,
       echo_service_provider, echo_authorization, status, status_reason, verified_at, decided_at,
       provider_user_id, provider_phone_number, source
FROM events;

DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

CREATE INDEX events_pending_user ON events (user_id, sequence) WHERE status = 'pending';
CREATE INDEX events_received ON events (received_at, id);
CREATE INDEX events_exceptions ON events (status, received_at, id)
    WHERE status IN ('rejected', 'unverifiable');
