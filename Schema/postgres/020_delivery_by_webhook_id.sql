-- 020: a delivery looked up by the webhook-id its subscriber saw (GET /v1/deliveries/{webhook_id}).
-- The original delivery and its replays share the id, so it is not unique.
CREATE INDEX deliveries_webhook ON deliveries (webhook_id);
