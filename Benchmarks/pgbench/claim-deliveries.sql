-- The delivery claim, to run with `pgbench -M prepared` (scripts/bench-claim.bash): the worker's
-- claim statement, then the finish that stands for recording each claimed delivery as
-- delivered, each its own transaction.
--
-- COPIED FROM PostgresEventStore.claimDeliveries (Sources/EchoRelayPostgres/
-- PostgresEventStore+Deliveries.swift): the first statement below is that statement with its
-- interpolations as pgbench variables: \(owner) → :owner, \(lease.seconds) → :lease_seconds,
-- \(perSubscriptionCap) → :cap, \(limit) → :limit. When the worker's claim changes, copy it
-- here again, so the claim part measures the statement the worker runs. scripts/bench passes
-- the values with -D as a worker binds them by default (a lease of 60 s, 8 webhooks per
-- subscription, 64 per process); :owner is each client's own (pgbench's client_id).
\set owner :client_id
WITH in_flight AS (
    SELECT subscription_id, count(*) AS busy FROM deliveries
    WHERE status = 'pending' AND lease_expires_at > now()
    GROUP BY subscription_id
), candidates AS (
    SELECT d.id, d.attempts, d.due_at,
           row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.attempts > 0, d.due_at, d.id) AS rank,
           coalesce(f.busy, 0) AS busy
    FROM deliveries d
    JOIN subscriptions s ON s.id = d.subscription_id
    LEFT JOIN in_flight f ON f.subscription_id = d.subscription_id
    WHERE d.status = 'pending' AND d.due_at <= now() AND s.enabled AND s.deleted_at IS NULL
      AND (NOT s.ordered OR (
          NOT EXISTS (SELECT 1 FROM deliveries p
                      WHERE p.subscription_id = d.subscription_id AND p.user_id = d.user_id
                        AND p.sequence < d.sequence AND p.status = 'pending')
          AND NOT EXISTS (SELECT 1 FROM events e
                          WHERE e.user_id = d.user_id AND e.sequence < d.sequence
                            AND e.status = 'pending' AND e.type = ANY (s.event_types))))
), chosen AS (
    SELECT id FROM candidates WHERE rank + busy <= :cap
    ORDER BY attempts > 0, due_at LIMIT :limit
), locked AS (
    SELECT d.id FROM deliveries d
    WHERE d.id IN (SELECT id FROM chosen) AND d.status = 'pending' AND d.due_at <= now()
    FOR UPDATE SKIP LOCKED
)
UPDATE deliveries AS d
SET lease_owner = :owner,
    lease_expires_at = now() + make_interval(secs => :lease_seconds),
    due_at = now() + make_interval(secs => :lease_seconds),
    attempts = d.attempts + 1
FROM locked, events AS e, subscriptions AS s
WHERE d.id = locked.id AND e.id = d.event_id AND s.id = d.subscription_id
RETURNING d.id, d.event_id, d.subscription_id, d.webhook_id, d.attempts, s.url, s.secret,
          CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END,
          e.type, e.user_id, e.sequence, e.occurred_at, coalesce(e.verified_at, e.decided_at, now()),
          e.provider_phone_number,
          (SELECT p.provider_phone_number FROM events p
           WHERE p.user_id = e.user_id AND p.sequence < e.sequence AND p.status = 'verified'
           ORDER BY p.sequence DESC LIMIT 1),
          d.replay_id, (SELECT r.created_at FROM replays r WHERE r.id = d.replay_id);

-- The finish: what this client just claimed (due again when its lease ends, through the claim
-- index) becomes delivered, and leaves the claim's way.
UPDATE deliveries SET status = 'delivered', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
WHERE status = 'pending' AND lease_owner = :owner::text
  AND due_at > now() + make_interval(secs => :lease_seconds - 10) AND due_at <= now() + make_interval(secs => :lease_seconds);
