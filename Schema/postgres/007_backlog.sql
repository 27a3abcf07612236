-- The backlog bound (ECHORELAY_BACKLOG_LIMIT) counts, every half second, the distinct events
-- with a pending original delivery, up to twice the limit. Sorted by event, this index lets
-- that count stream the distinct events out of a bounded stretch of one index; the
-- subscription is in it too, to skip disabled subscriptions without reading the table.
CREATE INDEX deliveries_backlog ON deliveries (event_id, subscription_id) WHERE status = 'pending' AND replay_id IS NULL;
