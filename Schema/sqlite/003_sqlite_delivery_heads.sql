-- 003: only queue heads are due, as in PostgreSQL's 006_delivery_heads.sql. For an ordered
-- subscription, a delivery with an earlier pending delivery of the same (subscription,
-- user), or an earlier event of the user still awaiting verification, is parked (parked_at
-- set) until that one is final, so the claim reads each subscription's due heads and never
-- the backlog behind them.
ALTER TABLE deliveries ADD COLUMN parked_at INTEGER;

CREATE INDEX deliveries_due ON deliveries (subscription_id, due_at) WHERE status = 'pending' AND parked_at IS NULL;
CREATE INDEX deliveries_parked ON deliveries (user_id, subscription_id, sequence)
    WHERE status = 'pending' AND parked_at IS NOT NULL;
CREATE INDEX deliveries_leased ON deliveries (subscription_id, lease_expires_at)
    WHERE status = 'pending' AND lease_owner IS NOT NULL;
CREATE INDEX events_pending_user ON events (user_id, sequence) WHERE status = 'pending';
