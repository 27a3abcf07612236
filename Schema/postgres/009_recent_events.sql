-- 009: support's list of events across users (GET /v1/events), newest received first.
-- Every such list reads one of these two indexes backwards from its cursor and stops after a
-- page, however many events are stored:
--   events_received   all events, for a list by time, type, reason or subscription;
--   events_exceptions the events that ended rejected or unverifiable, few beside the
--                     verified, for "what was rejected", "what is stuck". Pending events are
--                     left out: every event is pending once, and ingest would pay for it;
--                     they are the newest, found near the start of events_received.
-- (Built inside the migration's transaction: on a large events table, apply it with
-- `echorelay migrate` in a quiet moment.)
CREATE INDEX events_received ON events (received_at, id);
CREATE INDEX events_exceptions ON events (status, received_at, id)
    WHERE status IN ('rejected', 'unverifiable');
