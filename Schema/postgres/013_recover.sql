-- 013: a replay may be a recover (POST /v1/subscriptions/{id}/recover): one subscription's
-- verified events that it never received, including those verified while it was disabled.
ALTER TABLE replays DROP CONSTRAINT replays_kind_check;
ALTER TABLE replays ADD CONSTRAINT replays_kind_check CHECK (kind IN ('event', 'bulk', 'recover'));
