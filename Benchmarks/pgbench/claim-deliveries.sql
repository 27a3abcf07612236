-- The delivery claim, to run with `pgbench -M prepared` (scripts/bench-claim.bash): the worker's
-- claim statement, then the worker's statement that records attempts, for every delivery
-- claimed, as delivered; each its own transaction.
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
      AND id NOT IN (SELECT unnest(:answered::int8[]))
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
          d.replay_id, (SELECT r.created_at FROM replays r WHERE r.id = d.replay_id), e.reason;

-- The finish is the worker's too: RecordAttemptsStatement (Sources/EchoRelayPostgres/
-- PostgresEventStore+Deliveries.swift), recording every delivery this client holds as answered
-- 200 in a millisecond, in one batch, as the worker's group commit records its answers. Its
-- one parameter, the attempts as a jsonb array, is read first from the deliveries this client
-- holds (a few index entries: deliveries_leased) and passed as :attempts, with the values a
-- worker sends for a success (ECHORELAY_DISABLE_AFTER's 5 days as `overdue`, a hand-off to
-- itself, the claim's cap). ClaimStatementTests keeps this statement equal to the worker's as well.
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'position', n, 'delivery_id', id, 'owner', :owner::text, 'status', 'delivered', 'delay', 0,
           'started_at', extract(epoch FROM now()), 'duration_ms', 1, 'status_code', 200, 'error_kind', NULL,
           'error', NULL, 'response_head', 'ok', 'subscription_id', subscription_id, 'user_id', user_id,
           'effect', 'succeeded', 'gone_reason', NULL, 'overdue', 432000, 'hand_owner', :owner::text,
           'hand_lease', :lease_seconds::float8, 'cap', :cap::int)), '[]') AS attempts
FROM (SELECT row_number() OVER (ORDER BY id) - 1 AS n, id, subscription_id, user_id FROM deliveries
      WHERE status = 'pending' AND lease_owner IS NOT NULL AND lease_owner = :owner::text) held
\gset
WITH input AS (
    SELECT * FROM jsonb_to_recordset(:attempts::jsonb) AS x(
        position int, delivery_id bigint, owner text, status text, delay float8, started_at float8,
        duration_ms int, status_code int, error_kind text, error text, response_head text,
        subscription_id text, user_id text, effect text, gone_reason text, overdue float8,
        hand_owner text, hand_lease float8, cap bigint)
), updated AS (
    UPDATE deliveries d
    SET status = x.status, due_at = now() + make_interval(secs => x.delay),
        lease_owner = NULL, lease_expires_at = NULL,
        finished_at = CASE WHEN x.status = 'pending' THEN NULL ELSE now() END
    FROM input x
    -- By key (`= ANY`): a join the planner may hash would read every pending delivery,
    -- and IS NOT DISTINCT FROM (`=` for these values) implies no partial index's
    -- predicate, so that key is the only way in (see LeasedDeliveriesStatement).
    WHERE d.id = ANY (ARRAY(SELECT delivery_id FROM input))
      AND d.id = x.delivery_id AND d.lease_owner IS NOT DISTINCT FROM x.owner AND d.status IS NOT DISTINCT FROM 'pending'
    RETURNING x.position
), kept AS (
    -- By position, not delivery id: another worker's late attempt at the same
    -- delivery may sit in the same batch, and only the lease holder's counts.
    SELECT x.* FROM input x JOIN updated u ON u.position = x.position
), stored AS (
    INSERT INTO delivery_attempts (delivery_id, user_id, started_at, duration_ms, status_code, error_kind, error, response_head)
    SELECT delivery_id, user_id, to_timestamp(started_at), duration_ms, status_code, error_kind, error, response_head
    FROM kept ORDER BY position
), unparked AS (
    -- A delivery final now lets the next one of its queue go, if it was parked
    -- behind it (the claim parks it again if something else still blocks it),
    -- due from when it was made: it is older than what was written since.
    -- With a hand-off it is leased at once, unless an earlier event of the user
    -- still awaits verification: that one the claim decides.
    UPDATE deliveries d
    SET parked_at = NULL,
        due_at = CASE WHEN h.owner IS NULL THEN least(d.created_at, now()) ELSE now() + make_interval(secs => h.lease) END,
        lease_owner = h.owner,
        lease_expires_at = now() + make_interval(secs => h.lease),
        attempts = d.attempts + CASE WHEN h.owner IS NOT NULL THEN 1 ELSE 0 END
    FROM (
        SELECT head.id, q.position,
               CASE WHEN NOT head.waiting THEN q.hand_owner END AS owner,
               CASE WHEN NOT head.waiting THEN q.hand_lease END AS lease
        FROM (SELECT DISTINCT ON (subscription_id, user_id) subscription_id, user_id, position, hand_owner, hand_lease
              FROM kept WHERE status <> 'pending' ORDER BY subscription_id, user_id, position) q
        JOIN subscriptions s ON s.id = q.subscription_id
        CROSS JOIN LATERAL (
            SELECT p.id, EXISTS (SELECT 1 FROM events e
                                 WHERE e.user_id = p.user_id AND e.sequence < p.sequence
                                   AND e.status = 'pending' AND e.type = ANY (s.event_types)) AS waiting
            FROM deliveries p
            WHERE p.user_id = q.user_id AND p.subscription_id = q.subscription_id
              AND p.status = 'pending' AND p.parked_at IS NOT NULL
            ORDER BY p.sequence LIMIT 1) head
    ) h
    -- A probe per row (not an anti-join, which would read every pending delivery).
    WHERE d.id = h.id
      AND (SELECT 1 FROM deliveries p
           WHERE p.subscription_id = d.subscription_id AND p.user_id = d.user_id
             AND p.sequence < d.sequence AND p.status = 'pending'
             AND p.id NOT IN (SELECT delivery_id FROM kept WHERE status <> 'pending')
           LIMIT 1) IS NULL
    RETURNING d.id, h.position, d.lease_owner
), summary AS (
    SELECT subscription_id,
           bool_or(effect = 'succeeded') AS any_success,
           (array_agg(effect ORDER BY position DESC) FILTER (WHERE effect <> 'gone'))[1] AS last_effect,
           bool_or(effect = 'failed' AND (first_success IS NULL OR position < first_success)) AS failed_before_success,
           (array_agg(gone_reason ORDER BY position DESC) FILTER (WHERE effect = 'gone'))[1] AS gone_reason,
           max(overdue) AS overdue
    FROM (SELECT k.*, min(position) FILTER (WHERE effect = 'succeeded') OVER (PARTITION BY subscription_id) AS first_success
          FROM kept k) k
    GROUP BY subscription_id
), changing AS (
    SELECT s.id, m.any_success, m.last_effect, m.gone_reason,
           coalesce(m.failed_before_success AND s.enabled
                    AND s.failing_since < now() - make_interval(secs => m.overdue), false) AS overdue
    FROM subscriptions s JOIN summary m ON m.subscription_id = s.id
    WHERE m.gone_reason IS NOT NULL
       OR (m.any_success AND (s.failing_since IS NOT NULL OR s.last_success_at IS NULL
                              OR s.last_success_at < now() - interval '1 second'))
       OR (m.last_effect = 'failed' AND (m.any_success OR s.failing_since IS NULL))
       OR (m.failed_before_success AND s.enabled
           AND s.failing_since < now() - make_interval(secs => m.overdue))
    ORDER BY s.id
    -- NO KEY: the weakest lock that orders these writes; a plain FOR UPDATE would
    -- also wait for the key-share locks that rows referring to a subscription take
    -- (until 015, every new delivery's; an outcome batch then deadlocked with it).
    FOR NO KEY UPDATE OF s
), subscription AS (
    UPDATE subscriptions s
    -- The time it is written, not the transaction's start: a statement that waited for
    -- this row must not write a time already a second old, or the next batch would
    -- find it stale and lock the row again, and so on: a convoy.
    SET last_success_at = CASE WHEN c.any_success THEN clock_timestamp() ELSE s.last_success_at END,
        failing_since = CASE c.last_effect WHEN 'succeeded' THEN NULL
                                           WHEN 'failed' THEN CASE WHEN c.any_success THEN now()
                                                                   ELSE coalesce(s.failing_since, now()) END
                                           ELSE s.failing_since END,
        enabled = s.enabled AND c.gone_reason IS NULL AND NOT c.overdue,
        disabled_reason = CASE
            WHEN c.gone_reason IS NOT NULL THEN c.gone_reason
            -- The colons are quoted text of the format, so that pgbench (which runs this
            -- statement in Benchmarks/pgbench/claim-deliveries.sql) reads no variable in it.
            WHEN c.overdue
                THEN 'every delivery has failed since ' || to_char(s.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS"Z"')
            ELSE s.disabled_reason END,
        updated_at = CASE WHEN c.gone_reason IS NOT NULL THEN now() ELSE s.updated_at END
    FROM changing c WHERE s.id = c.id
), waiting AS (
    -- Deliveries of these subscriptions that are due and leased to nobody: a claim
    -- stopped by a subscription's cap left them, and the slots these attempts free let
    -- the next claim take them. (A leased delivery's due_at is its lease's end.) Only
    -- where the leases left once these are final (webhooks in flight, hand-offs waiting
    -- in an inbox) are under the cap: else a claim finds no room, as most did under a
    -- backlog, when every record asked for one. Counted up to the cap only: thousands of
    -- hand-offs may wait under a backlog, and counting them all doubled this statement's time.
    SELECT 1 FROM (SELECT subscription_id, max(cap) AS cap FROM kept GROUP BY subscription_id) k
    WHERE EXISTS (SELECT 1 FROM deliveries p
                  WHERE p.subscription_id = k.subscription_id AND p.status = 'pending'
                    AND p.parked_at IS NULL AND p.due_at <= now())
      AND (SELECT count(*) FROM (SELECT FROM deliveries b
                                   WHERE b.subscription_id = k.subscription_id AND b.status = 'pending'
                                     AND b.lease_owner IS NOT NULL AND b.lease_expires_at > now()
                                     AND b.id <> ALL (ARRAY(SELECT delivery_id FROM kept))
                                   LIMIT k.cap) leases) < k.cap
    LIMIT 1
)
SELECT u.position, ARRAY(SELECT n.id FROM unparked n WHERE n.position = u.position AND n.lease_owner IS NOT NULL),
       EXISTS (SELECT 1 FROM unparked n WHERE n.lease_owner IS NULL) OR EXISTS (SELECT 1 FROM waiting)
FROM updated u;
