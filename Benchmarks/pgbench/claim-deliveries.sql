-- The delivery claim, to run with `pgbench -M prepared` (scripts/bench-claim.bash): the worker's
-- claim statement, then the finish that stands for recording each claimed delivery as
-- delivered, each its own transaction.
--
-- The first statement is ClaimDeliveriesStatement (Sources/EchoRelayPostgres/
-- ClaimStatements.swift), prepared as the worker prepares it, with its parameters as pgbench
-- variables (:answered, :cap, :limit, :owner, :lease_seconds for $1 to $5); ClaimStatementTests
-- keeps the two equal, so the claim part measures the statement the worker runs. scripts/bench
-- passes the values with -D as a worker binds them by default (a lease of 60 s, 8 webhooks per
-- subscription, 64 per process; nothing answered and unrecorded, as this client finishes what
-- it claims at once); :owner is each client's own (pgbench's client_id).
\set owner :client_id
WITH busy AS (
    SELECT subscription_id, count(*) AS n FROM deliveries
    WHERE status = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at > now()
      AND id <> ALL (:answered::int8[])
    GROUP BY subscription_id
), open AS (
    SELECT s.id, s.ordered, s.event_types, :cap - coalesce(b.n, 0) AS room
    FROM subscriptions s LEFT JOIN busy b ON b.subscription_id = s.id
    WHERE s.enabled AND s.deleted_at IS NULL AND coalesce(b.n, 0) < :cap
), due AS (
    SELECT d.*, o.room, o.ordered AND (
               EXISTS (SELECT 1 FROM deliveries p
                       WHERE p.subscription_id = d.subscription_id AND p.user_id = d.user_id
                         AND p.sequence < d.sequence AND p.status = 'pending')
            OR EXISTS (SELECT 1 FROM events e
                       WHERE e.user_id = d.user_id AND e.sequence < d.sequence
                         AND e.status = 'pending' AND e.type = ANY (o.event_types))) AS blocked
    FROM open o CROSS JOIN LATERAL (
        SELECT d.id, d.subscription_id, d.user_id, d.sequence, d.attempts, d.due_at FROM deliveries d
        WHERE d.subscription_id = o.id AND d.status = 'pending' AND d.parked_at IS NULL AND d.due_at <= now()
        ORDER BY d.due_at
        LIMIT o.room + 8
        FOR UPDATE SKIP LOCKED
    ) d
), parked AS (
    UPDATE deliveries d SET parked_at = now()
    FROM due WHERE d.id = due.id AND due.blocked
), chosen AS (
    SELECT id FROM (SELECT id, attempts, due_at, room,
                           row_number() OVER (PARTITION BY subscription_id ORDER BY attempts > 0, due_at) AS rank
                    FROM due WHERE NOT blocked) ranked
    WHERE rank <= room
    ORDER BY attempts > 0, due_at LIMIT :limit
)
UPDATE deliveries AS d
SET lease_owner = :owner,
    lease_expires_at = now() + make_interval(secs => :lease_seconds),
    due_at = now() + make_interval(secs => :lease_seconds),
    attempts = d.attempts + 1
FROM chosen, events AS e, subscriptions AS s
WHERE d.id = chosen.id AND e.id = d.event_id AND s.id = d.subscription_id
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
