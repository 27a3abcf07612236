-- 008: a subscription's own deliveries, newest first, as PostgreSQL's
-- 012_subscription_deliveries.sql.
CREATE INDEX deliveries_subscription ON deliveries (subscription_id, id);
