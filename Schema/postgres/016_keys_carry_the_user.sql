-- 016: every row of a user's work carries the user id in its keys, so that the per-user
-- tables can be spread over shards (or hash partitions) by user id (docs/scaling.md).
-- A table partitioned by a column needs that column in each of its unique keys, and a row
-- is placed by it when written, so it must be in the row from the start.
-- A verification work item names its user, as a delivery already does.
ALTER TABLE work_items ADD COLUMN user_id text;
UPDATE work_items w SET user_id = e.user_id FROM events e WHERE e.id = w.event_id;
ALTER TABLE work_items ALTER COLUMN user_id SET NOT NULL;
-- An attempt names the user of its delivery, so that it lives in its delivery's shard.
ALTER TABLE delivery_attempts ADD COLUMN user_id text;
UPDATE delivery_attempts a SET user_id = d.user_id FROM deliveries d WHERE d.id = a.delivery_id;
ALTER TABLE delivery_attempts ALTER COLUMN user_id SET NOT NULL;
-- The fan-out's ON CONFLICT names this key: with the user in it, the same statement works on
-- a table partitioned by user. An event has one user, so the key allows the same rows.
CREATE UNIQUE INDEX deliveries_original_user_key ON deliveries (event_id, subscription_id, user_id) WHERE replay_id IS NULL;
DROP INDEX deliveries_original_key;
ALTER INDEX deliveries_original_user_key RENAME TO deliveries_original_key;
