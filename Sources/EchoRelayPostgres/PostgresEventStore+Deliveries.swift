import EchoRelayCore
import EchoRelaySQL
import Foundation
import PostgresNIO

extension PostgresEventStore: DeliveryStore {
    public func claimDeliveries(owner: String, limit: Int, lease: Duration, perSubscriptionCap: Int,
                                answered: [Int64]) async throws -> [DeliveryTask] {
        do {
            // Each enabled subscription's due deliveries in due order, read from its front
            // and locked: only heads are due (006_delivery_heads.sql), so this never reads the
            // backlog parked behind them. An ordered subscription's heads are checked once
            // more — no earlier pending delivery of the user for it, no earlier event of a type
            // it wants still awaiting verification — and those still blocked are parked (a
            // delivery unparked early, or made due by a replay, is parked here). It takes up
            // to its cap minus what it has in flight (leased, less what this process has
            // answered and not yet recorded), first tries before retries; the window
            // reads a few more than that, so that parking keeps ahead of delivering.
            let rows = try await client.execute(
                ClaimDeliveriesStatement(owner: owner, limit: limit, lease: lease, perSubscriptionCap: perSubscriptionCap,
                                         answered: answered),
                logger: logger
            )
            return try await tasks(from: rows)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func leasedDeliveries(ids: [Int64], owner: String) async throws -> [DeliveryTask] {
        guard !ids.isEmpty else { return [] }
        do {
            return try await tasks(from: client.execute(LeasedDeliveriesStatement(ids: ids, owner: owner), logger: logger))
        } catch {
            throw StoreError.wrap(error)
        }
    }

    private func tasks<Rows: AsyncSequence>(from rows: Rows) async throws -> [DeliveryTask]
    where Rows.Element == DeliveryTaskRow.Values {
        var tasks: [DeliveryTask] = []
        for try await row in rows {
            guard let type = EventType(rawValue: row.8) else { throw StoreError.unexpected("event \(row.1) has an unknown type") }
            tasks.append(DeliveryTask(
                deliveryID: row.0, eventID: row.1, subscriptionID: row.2, webhookID: row.3, url: row.5,
                secrets: try SecretSealer.signingSecrets(row.6, row.7, subscriptionID: row.2, with: sealer), attempts: row.4, type: type,
                userID: row.9, sequence: row.10, occurredAt: row.11, verifiedAt: row.12, phoneNumber: row.13,
                previousPhoneNumber: row.14, replay: row.15.flatMap { id in row.16.map { DeliveryReplay(id: id, at: $0) } },
                reason: row.17
            ))
        }
        return tasks
    }

    public func recordDeliveryAttempts(
        _ records: [AttemptRecord], owner: String, disableAfter: Duration, handOff: HandOff?, perSubscriptionCap: Int
    ) async -> [Result<FinishedWork, any Error>] {
        guard !records.isEmpty else { return [] }
        let attempts = records.map { RecordedAttempt($0, owner: owner, disableAfter: disableAfter, handOff: handOff, cap: perSubscriptionCap) }
        do {
            return try await writeAttempts(within: Self.workFlushLimit) { attempts }
        } catch {
            return records.map { _ in .failure(error) }
        }
    }

    public func writeAttempts(
        within limit: Duration, take: @escaping @Sendable () -> [RecordedAttempt]
    ) async throws -> [Result<FinishedWork, any Error>] {
        try await writeBatch(within: limit, take: take) { [logger] in await Self.recordBatch($0, on: $1, logger: logger) }
    }

    /// Records a batch of attempts in one statement.
    /// A statement that fails as a whole is retried one attempt at a time, so each caller
    /// gets its own answer.
    private static func recordBatch(_ attempts: [RecordedAttempt], on connection: PostgresConnection, logger: Logger) async -> [Result<FinishedWork, any Error>] {
        await writeLeased(attempts, "delivery attempts", logger: logger) { try await recordStatement($0, on: connection, logger: logger) }
    }

    /// One statement, so one round trip and one commit for the batch. Each delivery is
    /// updated first, which proves its lease is still ours; only those attempts are stored
    /// and count for their subscription. Per subscription, the batch has the effect its
    /// attempts would have one after another: a success clears the failing state and marks
    /// the last success; a failure starts the failing period (anew after a success in the
    /// same batch); a failure while failing for `disableAfter` disables it; a 410 disables it
    /// with its reason. A subscription row is locked only when it changes, in id order (after
    /// the deliveries: deleteSubscription's order), since every delivery to one subscription
    /// would otherwise queue on that row until each other's commit. So a healthy
    /// subscription's last success is kept to the second, and the failures after the first
    /// leave it alone until it is due to be disabled.
    /// A delivery final now lets the next one of its queue go, leased at once to the hand-off's
    /// owner if it has one. Answers, by position in `attempts`, those whose lease was still
    /// ours, each with the delivery it handed off.
    private static func recordStatement(
        _ attempts: [RecordedAttempt], on connection: PostgresConnection, logger: Logger
    ) async throws -> [Int: FinishedWork] {
        let rows = JSONRowsWriter.text(attempts.enumerated().map(RecordedAttempt.Row.init))
        let result = try await connection.execute(RecordAttemptsStatement(rows: rows), logger: logger)
        return try await positions(result)
    }

    public func unparkStrandedDeliveries(parkedSince: Date?) async throws -> Int {
        try await wrapped {
            let rows = try await client.query("""
                UPDATE deliveries d SET parked_at = NULL, due_at = least(d.created_at, now())
                FROM (SELECT p.id FROM deliveries p JOIN subscriptions s ON s.id = p.subscription_id
                      -- `> '-infinity'`: the predicate of deliveries_parked_at (017), its index.
                      WHERE p.status = 'pending' AND p.parked_at > '-infinity'
                        AND p.parked_at >= coalesce(\(parkedSince)::timestamptz, '-infinity')
                        AND NOT (s.ordered AND (
                                EXISTS (SELECT 1 FROM deliveries b
                                        WHERE b.subscription_id = p.subscription_id AND b.user_id = p.user_id
                                          AND b.sequence < p.sequence AND b.status = 'pending')
                             OR EXISTS (SELECT 1 FROM events e
                                        WHERE e.user_id = p.user_id AND e.sequence < p.sequence
                                          AND e.status = 'pending' AND e.type = ANY (s.event_types))))
                      FOR UPDATE OF p SKIP LOCKED) free
                WHERE d.id = free.id
                RETURNING d.id
                """, logger: logger)
            return try await rows.collect().count
        }
    }

    public func releaseDeliveries(ids: [Int64], owner: String) async throws {
        guard !ids.isEmpty else { return }
        do {
            try await client.query("""
                UPDATE deliveries
                SET due_at = now(), lease_owner = NULL, lease_expires_at = NULL, attempts = greatest(attempts - 1, 0)
                WHERE id = ANY (\(ids)) AND lease_owner IS NOT DISTINCT FROM \(owner) AND status IS NOT DISTINCT FROM 'pending'
                """, logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// An event's deliveries: originals and replays apart, each through its unique index (no
    /// index has the event alone, and `event_id = $1` by itself reads the whole table).
    static let eventDeliveriesSQL = """
        SELECT \(DeliveryRecord.columns) FROM deliveries WHERE event_id = $1 AND replay_id IS NULL
        UNION ALL
        SELECT \(DeliveryRecord.columns) FROM deliveries WHERE event_id = $1 AND replay_id IS NOT NULL
        ORDER BY id
        """

    public func deliveries(eventID: String) async throws -> [DeliveryRecord] {
        try await wrapped {
            var records: [Int64: DeliveryRecord] = [:]
            var order: [Int64] = []
            var binds = PostgresBindings(capacity: 1)
            binds.append(eventID)
            let rows = try await client.query(PostgresQuery(unsafeSQL: Self.eventDeliveriesSQL, binds: binds), logger: logger)
            for row in try await rows.storeRows() {
                let id = try row.int64(0)
                records[id] = try DeliveryRecord(row: row)
                order.append(id)
            }
            let attempts = try await client.query("""
                SELECT \(unescaped: DeliveryAttempt.columns), a.delivery_id
                FROM delivery_attempts a WHERE a.delivery_id = ANY (\(order)) ORDER BY a.id
                """, logger: logger)
            for row in try await attempts.storeRows() {
                records[try row.int64(6)]?.attempts.append(try DeliveryAttempt(row: row))
            }
            return order.compactMap { records[$0] }
        }
    }
}

/// An attempt's row in the batch statement's JSON.
extension RecordedAttempt {
    /// Encodable for the test that checks `write(to:)` against `JSONEncoder`.
    struct Row: Encodable, JSONRow {
        let position: Int
        let delivery_id: Int64
        let owner: String
        let status: String
        let delay: Double
        /// Seconds since 1970: `to_timestamp` keeps microseconds, as a bound date does.
        let started_at: Double
        let duration_ms: Int
        let status_code: Int?
        let error_kind: String?
        let error: String?
        let response_head: String?
        let subscription_id: String
        let user_id: String
        /// What the attempt does to its subscription: succeeded, failed, or gone (a 410).
        let effect: String
        let gone_reason: String?
        let overdue: Double
        /// Who leases the next delivery of the queue at once, and for how long.
        let hand_owner: String?
        let hand_lease: Double?
        let cap: Int

        init(_ position: Int, _ recorded: RecordedAttempt) {
            self.position = position
            delivery_id = recorded.task.deliveryID
            owner = recorded.owner
            subscription_id = recorded.task.subscriptionID
            user_id = recorded.task.userID
            status = recorded.next.status.rawValue
            delay = recorded.next.retryDelay.seconds
            (effect, gone_reason) = switch recorded.next {
            case .delivered: ("succeeded", nil)
            case .dead(let reason?): ("gone", reason)
            case .retry, .dead(nil): ("failed", nil)
            }
            let attempt = recorded.attempt
            started_at = attempt.startedAt.timeIntervalSince1970
            duration_ms = Int(attempt.duration.seconds * 1000)
            status_code = attempt.statusCode
            error_kind = attempt.errorKind?.rawValue
            error = attempt.error
            response_head = attempt.responseHead
            overdue = recorded.disableAfter.seconds
            hand_owner = recorded.handOff?.owner
            hand_lease = recorded.handOff?.lease.seconds
            cap = recorded.cap
        }

        func write(to row: inout JSONRowsWriter) {
            row.add("position", position)
            row.add("delivery_id", delivery_id)
            row.add("owner", owner)
            row.add("status", status)
            row.add("delay", delay)
            row.add("started_at", started_at)
            row.add("duration_ms", duration_ms)
            row.add("status_code", status_code)
            row.add("error_kind", error_kind)
            row.add("error", error)
            row.add("response_head", response_head)
            row.add("subscription_id", subscription_id)
            row.add("user_id", user_id)
            row.add("effect", effect)
            row.add("gone_reason", gone_reason)
            row.add("overdue", overdue)
            row.add("hand_owner", hand_owner)
            row.add("hand_lease", hand_lease)
            row.add("cap", cap)
        }
    }
}

/// `PostgresEventStore.recordStatement`'s statement, prepared: the server plans it once per
/// connection (its plan does not depend on the rows, which come as one jsonb array).
struct RecordAttemptsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
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
        FROM updated u
        """

    static let bindingDataTypes: [PostgresDataType] = [.text]

    typealias Row = (Int, [Int64]?, Bool)

    var rows: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(rows)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// The `webhook-id` rule (`WebhookID` in Core) as SQL over two text expressions, for the
/// statements that fan an event out to its subscriptions in the database.
enum WebhookIDSQL {
    static func expression(eventID: String, subscriptionID: String) -> String {
        "'msg_' || substr(md5(\(eventID) || '/' || \(subscriptionID)), 1, 26)"
    }
}
