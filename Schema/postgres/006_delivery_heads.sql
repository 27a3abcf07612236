-- 006: only queue heads are due. For an ordered subscription, a delivery with an earlier
-- pending delivery of the same (subscription, user), or an earlier event of the user still
-- awaiting verification, is parked (parked_at set) until that one is final. The claim then
-- reads each subscription's due heads and never the backlog behind them, so its cost does
-- not grow with the backlog. Unparking is liberal: the claim checks the order rule again on
-- what it reads and parks anything still blocked.
ALTER TABLE deliveries ADD COLUMN parked_at timestamptz;

-- The claim: a subscription's due, unparked deliveries in due order.
CREATE INDEX deliveries_due ON deliveries (subscription_id, due_at)
    WHERE status = 'pending' AND parked_at IS NULL;
-- Unparking: a user's parked deliveries per subscription, in order.
CREATE INDEX deliveries_parked ON deliveries (user_id, subscription_id, sequence)
    WHERE status = 'pending' AND parked_at IS NOT NULL;
-- The sweeper, the safety net for a park that raced with its blocker becoming final: the
-- recently parked.
CREATE INDEX deliveries_parked_at ON deliveries (parked_at)
    WHERE status = 'pending' AND parked_at IS NOT NULL;
-- Deliveries in flight per subscription (its concurrency cap), without reading the rest: the
-- leases not yet over lead, so the planner takes this index for them even when statistics
-- were taken with nothing in flight.
CREATE INDEX deliveries_leased ON deliveries (lease_expires_at, subscription_id)
    WHERE status = 'pending' AND lease_owner IS NOT NULL;
-- The order rule's other half: an earlier event of the user still awaiting verification.
CREATE INDEX events_pending_user ON events (user_id, sequence) WHERE status = 'pending';

-- The old claim's index, every pending delivery by due time, is no longer read by the claim.
-- Worse, when statistics were taken with the queue empty, the planner took it for the order
-- rule's probe of one queue and read every pending delivery per probe; with it gone, the probe
-- is an index condition on deliveries_order.
DROP INDEX deliveries_claim;
