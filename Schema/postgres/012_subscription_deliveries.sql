-- 012: a subscription's own deliveries, newest first (GET /v1/subscriptions/{id}/deliveries):
-- without this index the list walks every subscription's deliveries by id to find one
-- subscription's.
CREATE INDEX deliveries_subscription ON deliveries (subscription_id, id);
