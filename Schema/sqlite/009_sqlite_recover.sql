-- echorelay: foreign keys off
-- 009: a replay may be a recover, as PostgreSQL's 013_recover.sql. SQLite cannot change a
-- CHECK, so the table is made again; the line above keeps dropping the old table from
-- cascading to every replayed delivery (see 007).
CREATE TABLE replays_new (
    id               TEXT PRIMARY KEY,               -- rpl_…
    kind             TEXT NOT NULL CHECK (kind IN ('event', 'bulk', 'recover')),
    -- 'running' until cancelled; it reads as completed once every delivery is created
    -- (cursor_done) and final.
    state            TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'cancelled')),
    created_at       INTEGER NOT NULL,
    cancelled_at     INTEGER,
    actor_name       TEXT NOT NULL,
    actor_role       TEXT NOT NULL,
    reason           TEXT NOT NULL,
    event_id         TEXT REFERENCES events (id) ON DELETE CASCADE,  -- set for the replay of one event
    filter           TEXT CHECK (filter IS NULL OR json_valid(filter)),  -- a bulk replay's filter or a recover's window (JSON)
    matched          INTEGER NOT NULL,
    -- Bulk replays and recovers create their deliveries in batches, in (user_id, sequence,
    -- subscription_id) order, so a user's deliveries are queued in order. The cursor is the
    -- last pair created; it commits with each batch, so a restart resumes where it stopped.
    max_delivery_id  INTEGER,                        -- bulk: only deliveries that existed when it was asked
    cursor_user_id   TEXT,
    cursor_sequence  INTEGER,
    cursor_subscription_id TEXT,
    cursor_done      INTEGER NOT NULL DEFAULT 0 CHECK (cursor_done IN (0, 1)),
    sent             INTEGER NOT NULL DEFAULT 0      -- deliveries created so far
) STRICT;

INSERT INTO replays_new (id, kind, state, created_at, cancelled_at, actor_name, actor_role, reason, event_id, filter,
                         matched, max_delivery_id, cursor_user_id, cursor_sequence, cursor_subscription_id,
                         cursor_done, sent)
SELECT id, kind, state, created_at, cancelled_at, actor_name, actor_role, reason, event_id, filter,
       matched, max_delivery_id, cursor_user_id, cursor_sequence, cursor_subscription_id, cursor_done, sent
FROM replays;

DROP TABLE replays;
ALTER TABLE replays_new RENAME TO replays;

CREATE INDEX replays_creating ON replays (created_at) WHERE state = 'running' AND cursor_done = 0;
