-- 005: support's list of events across users (GET /v1/events), newest received first, as
-- PostgreSQL's 009_recent_events.sql: all events by time, and those rejected or unverifiable.
CREATE INDEX events_received ON events (received_at, id);
CREATE INDEX events_exceptions ON events (status, received_at, id)
    WHERE status IN ('rejected', 'unverifiable');
