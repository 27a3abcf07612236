-- 004: replays (deliberate resends, of one event or in bulk) and the audit log of support
-- and admin actions.

CREATE TABLE replays (
    id               text PRIMARY KEY,               -- rpl_…
    kind             text NOT NULL CHECK (kind IN ('event', 'bulk')),
    -- 'running' until cancelled; it reads as completed once every delivery is created
    -- (cursor_done) and final.
    state            text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'cancelled')),
    created_at       timestamptz NOT NULL DEFAULT now(),
    cancelled_at     timestamptz,
    actor_name       text NOT NULL,
    actor_role       text NOT NULL,
    reason           text NOT NULL,
    event_id         text REFERENCES events (id) ON DELETE CASCADE,  -- set for the replay of one event
    filter           jsonb,                          -- the filter of a bulk replay, as asked
    matched          integer NOT NULL,
    -- A bulk replay creates its deliveries in batches, in (user_id, sequence, subscription_id)
    -- order, so a user's replayed events are queued in order. The cursor is the last pair
    -- created; it commits with each batch, so a restart resumes where it stopped.
    max_delivery_id  bigint,                         -- only deliveries that existed when it was asked
    cursor_user_id   text,
    cursor_sequence  bigint,
    cursor_subscription_id text,
    cursor_done      boolean NOT NULL DEFAULT false,
    sent             integer NOT NULL DEFAULT 0      -- deliveries created so far
);
CREATE INDEX replays_creating ON replays (created_at) WHERE state = 'running' AND NOT cursor_done;

-- A replayed delivery is a new row with the same webhook-id, marked with its replay, so the
-- original (event, subscription) stays unique and each replay adds at most one per pair.
ALTER TABLE deliveries ADD COLUMN replay_id text REFERENCES replays (id) ON DELETE CASCADE;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_subscription_key;
CREATE UNIQUE INDEX deliveries_original_key ON deliveries (event_id, subscription_id) WHERE replay_id IS NULL;
CREATE UNIQUE INDEX deliveries_replay_key ON deliveries (event_id, subscription_id, replay_id) WHERE replay_id IS NOT NULL;
-- The bulk replay cursor walks original deliveries by user and sequence.
CREATE INDEX deliveries_user_order ON deliveries (user_id, sequence, subscription_id) WHERE replay_id IS NULL;
CREATE INDEX deliveries_replay ON deliveries (replay_id) WHERE replay_id IS NOT NULL;
CREATE INDEX deliveries_dead ON deliveries (id) WHERE status = 'dead';

-- Every support and admin action: who (the token's name and role), what, which filter, how
-- many it matched, and why. Never secrets.
CREATE TABLE audit_log (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT now(),
    actor_token_id text,                             -- NULL for ECHORELAY_ADMIN_TOKEN and the command line
    actor_name     text NOT NULL,
    actor_role     text NOT NULL,
    action         text NOT NULL,                    -- e.g. event.replay, subscription.delete
    target         text,                             -- the id acted on
    filter         jsonb,                            -- the filter of a bulk action
    matched        integer,
    reason         text
);
CREATE INDEX audit_log_at ON audit_log (at);
