import EchoRelayCore
import EchoRelaySQL
import Foundation
import PostgresNIO

extension PostgresEventStore {
    public func claimVerifications(owner: String, limit: Int, lease: Duration) async throws -> [VerificationTask] {
        do {
            let rows = try await client.execute(ClaimVerificationsStatement(owner: owner, limit: limit, lease: lease), logger: logger)
            var tasks: [VerificationTask] = []
            for try await (itemID, attempts, eventID, type, userID, sequence, occurredAt, phone, provider, authorization, source,
                           accessToken, path) in rows {
                guard let type = EventType(rawValue: type), let source = EventSource(rawValue: source),
                      let path = VerificationPath(rawValue: path) else {
                    throw StoreError.unexpected("event \(eventID) has an unknown type, source or path")
                }
                let echo = provider.flatMap { provider in
                    authorization.map { EchoCredentials(serviceProvider: provider, authorization: Secret($0)) }
                }
                tasks.append(VerificationTask(
                    workItemID: itemID, eventID: eventID, type: type, userID: userID, sequence: sequence,
                    occurredAt: occurredAt, pushedPhoneNumber: phone, echo: echo,
                    oauth2: accessToken.map { OAuth2Credentials(accessToken: Secret($0)) }, attempts: attempts, source: source, path: path
                ))
            }
            return tasks
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func finishVerification(
        _ task: VerificationTask, owner: String, outcome: VerificationOutcome, handOff: HandOff?
    ) async throws -> FinishedWork {
        let finish = VerificationFinish(task: task, owner: owner, outcome: outcome, handOff: handOff)
        return try await writeVerificationFinishes(within: Self.workFlushLimit) { [finish] }[0].get()
    }

    public func writeVerificationFinishes(
        within limit: Duration, take: @escaping @Sendable () -> [VerificationFinish]
    ) async throws -> [Result<FinishedWork, any Error>] {
        try await writeBatch(within: limit, take: take) { [wakeOnOutcomes, logger] in
            await Self.finishBatch($0, on: $1, wakes: wakeOnOutcomes, logger: logger)
        }
    }

    /// Records a batch of outcomes in one transaction when it can. A user
    /// with several verified events in the batch gets them in sequence rounds, one statement
    /// each, since one statement may move a user's row only once. A statement that fails as a
    /// whole (a deadlock, a lost connection) is retried one item at a time, so each caller
    /// gets its own answer.
    static func finishBatch(
        _ finishes: [VerificationFinish], on connection: PostgresConnection, wakes: WakeLimiter?, logger: Logger
    ) async -> [Result<FinishedWork, any Error>] {
        var rounds: [[Int]] = []
        var verifiedPerUser: [String: Int] = [:]
        for (index, finish) in finishes.enumerated() {
            var round = 0
            if finish.outcome.status == .verified {
                round = verifiedPerUser[finish.task.userID, default: 0]
                verifiedPerUser[finish.task.userID] = round + 1
            }
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(index)
        }
        var answers: [(index: Int, result: Result<FinishedWork, any Error>)] = []
        for round in rounds {
            let results = await writeLeased(round.map { finishes[$0] }, "verification outcomes", logger: logger) {
                try await finishRound($0, on: connection, wakePayload: wakes?.next(), logger: logger)
            }
            answers += zip(round, results).map { ($0, $1) }
        }
        return answers.sorted { $0.index < $1.index }.map(\.result)
    }

    /// One statement, so one round trip and one commit for the whole round. Deleting the
    /// work item first proves the lease is still ours; everything else applies only to the
    /// items whose delete matched: the event's outcome (its echo credentials erased), the
    /// confirmed token, the user's state (only a newer sequence moves it) and one delivery
    /// per enabled subscription that wants the type. Rows shared between batches (tokens,
    /// users) are written in key order, so two rounds never wait on each other in a cycle.
    /// A new delivery that may go at once — a queue's head — is written leased to the finish's
    /// hand-off owner, if it has one. Answers, by position
    /// in `finishes`, those whose lease was still ours (a stale claim of the same item in the
    /// batch does not count), each with the deliveries it handed off.
    /// With a `wakePayload`, a round that makes deliveries due notifies the other processes'
    /// delivery workers inside its own transaction.
    private static func finishRound(
        _ finishes: [VerificationFinish], on connection: PostgresConnection, wakePayload: String?, logger: Logger
    ) async throws -> [Int: FinishedWork] {
        let rows = JSONRowsWriter.text(finishes.enumerated().map(VerificationFinish.Row.init))
        let result = try await connection.execute(FinishRoundStatement(rows: rows, wakePayload: wakePayload), logger: logger)
        return try await positions(result)
    }

    public func retryVerification(_ task: VerificationTask, owner: String, after delay: Duration) async throws -> Bool {
        do {
            let rows = try await client.query("""
                UPDATE work_items
                SET due_at = now() + make_interval(secs => \(delay.seconds)), lease_owner = NULL, lease_expires_at = NULL
                WHERE id = \(task.workItemID) AND lease_owner = \(owner)
                RETURNING id
                """, logger: logger)
            return try await rows.collect().count == 1
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func releaseVerification(_ task: VerificationTask, owner: String) async throws {
        do {
            try await client.query("""
                UPDATE work_items
                SET due_at = now(), lease_owner = NULL, lease_expires_at = NULL, attempts = greatest(attempts - 1, 0)
                WHERE id = \(task.workItemID) AND lease_owner = \(owner)
                """, logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func isTokenConfirmed(userID: String, tokenHash: [UInt8]) async throws -> Bool {
        do {
            let rows = try await client.query("""
                SELECT 1 FROM verified_tokens WHERE user_id = \(userID) AND token_sha256 = \(Data(tokenHash))
                """, logger: logger)
            return try await rows.collect().count > 0
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func confirmedToken(userID: String, tokenHash: [UInt8]) async throws -> ConfirmedToken? {
        try await rows("""
            SELECT t.expires_at, EXISTS (
                SELECT 1 FROM verified_tokens o
                WHERE o.user_id = t.user_id AND o.token_sha256 <> t.token_sha256 AND o.rotated_sequence > t.last_sequence)
            FROM verified_tokens t WHERE t.user_id = \(userID) AND t.token_sha256 = \(Data(tokenHash))
            """) { ConfirmedToken(expiresAt: try $0.optionalDate(0), superseded: try $0.bool(1)) }.first
    }

    public func user(id: String) async throws -> UserState? {
        try await rows("SELECT \(unescaped: UserState.columns) FROM users WHERE user_id = \(id)", UserState.init(row:)).first
    }
}

/// An outcome's row in the batch statement's JSON.
extension VerificationFinish {
    /// Encodable for the test that checks `write(to:)` against `JSONEncoder`.
    struct Row: Encodable, JSONRow {
        let position: Int
        let item: Int64
        let owner: String
        let event_id: String
        let user_id: String
        let sequence: Int64
        let type: String
        /// Seconds since 1970: `to_timestamp` keeps microseconds, as a bound date does.
        let occurred_at: Double
        let status: String
        let reason: String
        let verified: Bool
        let provider_user_id: String?
        let provider_phone: String?
        let token_hash: String?
        /// The confirmed token's `exp` (seconds since 1970), and whether its event replaces the user's earlier tokens.
        let token_expires: Double?
        let replaces_token: Bool
        /// The user's state and phone number if this verified event moves them.
        let state: String
        let user_phone: String?
        /// The hand-off: who leases the new deliveries that may go at once, and for how long.
        let hand_owner: String?
        let hand_lease: Double?

        init(_ position: Int, _ finish: VerificationFinish) {
            let task = finish.task, outcome = finish.outcome
            self.position = position
            let stateAfter = task.type.descriptor.userStateAfter
            item = task.workItemID
            owner = finish.owner
            event_id = task.eventID
            user_id = task.userID
            sequence = task.sequence
            type = task.type.rawValue
            occurred_at = task.occurredAt.timeIntervalSince1970
            status = outcome.status.rawValue
            reason = outcome.reason.rawValue
            verified = outcome.status == .verified
            provider_user_id = outcome.providerUserID
            provider_phone = outcome.providerPhoneNumber
            token_hash = outcome.confirmedTokenHash.map { Data($0).base64EncodedString() }
            token_expires = outcome.confirmedTokenExpiry?.timeIntervalSince1970
            replaces_token = task.type.descriptor.replacesToken
            state = stateAfter.rawValue
            user_phone = stateAfter == .deactivated ? nil : outcome.providerPhoneNumber
            hand_owner = finish.handOff?.owner
            hand_lease = finish.handOff?.lease.seconds
        }

        func write(to row: inout JSONRowsWriter) {
            row.add("position", position)
            row.add("item", item)
            row.add("owner", owner)
            row.add("event_id", event_id)
            row.add("user_id", user_id)
            row.add("sequence", sequence)
            row.add("type", type)
            row.add("occurred_at", occurred_at)
            row.add("status", status)
            row.add("reason", reason)
            row.add("verified", verified)
            row.add("provider_user_id", provider_user_id)
            row.add("provider_phone", provider_phone)
            row.add("token_hash", token_hash)
            row.add("token_expires", token_expires)
            row.add("replaces_token", replaces_token)
            row.add("state", state)
            row.add("user_phone", user_phone)
            row.add("hand_owner", hand_owner)
            row.add("hand_lease", hand_lease)
        }
    }
}

/// `PostgresEventStore.finishRound`'s statement, prepared: the server plans it once per connection
/// (its plan does not depend on the rows, which come as one jsonb array).
struct FinishRoundStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
                position int, item bigint, owner text, event_id text, user_id text, sequence bigint, type text, occurred_at float8,
                status text, reason text, verified boolean, provider_user_id text, provider_phone text,
                token_hash text, token_expires float8, replaces_token boolean, state text, user_phone text,
                hand_owner text, hand_lease float8)
        ), kept AS (
            -- By key (`= ANY`): a join the planner may hash would read every work item.
            DELETE FROM work_items w USING input x
            WHERE w.id = ANY (ARRAY(SELECT item FROM input)) AND w.id = x.item AND w.lease_owner = x.owner
            RETURNING x.position
        ), finished AS (
            SELECT x.* FROM input x JOIN kept ON kept.position = x.position
        ), decided AS (
            UPDATE events e
            SET status = f.status, status_reason = f.reason, decided_at = now(),
                verified_at = CASE WHEN f.verified THEN now() END,
                provider_user_id = f.provider_user_id, provider_phone_number = f.provider_phone,
                echo_service_provider = NULL, echo_authorization = NULL, oauth2_access_token = NULL
            FROM finished f WHERE e.id = f.event_id
        ), tokens AS (
            -- One row per token (a statement may move a row once): its newest confirmation,
            -- and its newest rotation.
            INSERT INTO verified_tokens (user_id, token_sha256, expires_at, last_sequence, rotated_sequence)
            SELECT f.user_id, decode(f.token_hash, 'base64'), to_timestamp(max(f.token_expires)), max(f.sequence),
                   max(f.sequence) FILTER (WHERE f.replaces_token)
            FROM finished f
            WHERE f.token_hash IS NOT NULL
            GROUP BY f.user_id, f.token_hash
            ORDER BY 1, 2
            ON CONFLICT (user_id, token_sha256) DO UPDATE
            SET last_verified_at = now(), expires_at = COALESCE(EXCLUDED.expires_at, verified_tokens.expires_at),
                last_sequence = greatest(verified_tokens.last_sequence, EXCLUDED.last_sequence),
                rotated_sequence = greatest(verified_tokens.rotated_sequence, EXCLUDED.rotated_sequence)
        ), moved AS (
            INSERT INTO users (user_id, state, phone_number, last_sequence, last_event_at)
            SELECT f.user_id, f.state, f.user_phone, f.sequence, to_timestamp(f.occurred_at) FROM finished f
            WHERE f.verified
            ORDER BY f.user_id
            ON CONFLICT (user_id) DO UPDATE
            SET state = EXCLUDED.state,
                phone_number = COALESCE(EXCLUDED.phone_number, users.phone_number),
                last_sequence = EXCLUDED.last_sequence, last_event_at = EXCLUDED.last_event_at,
                updated_at = now()
            WHERE users.last_sequence < EXCLUDED.last_sequence
        ), fan AS MATERIALIZED (
            -- Each new delivery, and whether it waits: behind an earlier pending delivery
            -- of its queue, or an earlier event of a wanted type still awaiting
            -- verification (this round's are final). Materialized, so each probe runs once.
            SELECT f.event_id, s.id AS subscription_id, f.user_id, f.sequence, f.hand_owner, f.hand_lease,
                   \(WebhookIDSQL.expression(eventID: "f.event_id", subscriptionID: "s.id")) AS webhook_id,
                   s.ordered AND (
                       (SELECT 1 FROM deliveries p
                        WHERE p.subscription_id = s.id AND p.user_id = f.user_id
                          AND p.sequence < f.sequence AND p.status = 'pending' LIMIT 1) IS NOT NULL
                    OR (SELECT 1 FROM events e
                        WHERE e.user_id = f.user_id AND e.sequence < f.sequence AND e.status = 'pending'
                          AND e.type = ANY (s.event_types)
                          AND e.id NOT IN (SELECT event_id FROM finished) LIMIT 1) IS NOT NULL) AS blocked
            FROM finished f JOIN subscriptions s
              ON s.enabled AND s.deleted_at IS NULL AND f.type = ANY (s.event_types)
            WHERE f.verified
        ), new AS MATERIALIZED (
            -- Leased at once to the hand-off's owner if it may go (its worker keeps the
            -- subscription's cap in memory).
            SELECT n.*, NOT n.blocked AND n.hand_owner IS NOT NULL AS leased FROM fan n
        ), fanned_out AS (
            INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, parked_at,
                                    due_at, lease_owner, lease_expires_at, attempts)
            SELECT n.event_id, n.subscription_id, n.user_id, n.sequence, n.webhook_id,
                   CASE WHEN n.blocked THEN now() END,
                   CASE WHEN n.leased THEN now() + make_interval(secs => n.hand_lease) ELSE now() END,
                   CASE WHEN n.leased THEN n.hand_owner END,
                   CASE WHEN n.leased THEN now() + make_interval(secs => n.hand_lease) END,
                   CASE WHEN n.leased THEN 1 ELSE 0 END
            FROM new n
            ON CONFLICT (event_id, subscription_id, user_id) WHERE replay_id IS NULL DO NOTHING
            RETURNING id, event_id, parked_at, lease_owner
        ), woken AS (
            SELECT pg_notify('\(PostgresWorkNotifications.channel)', $2::text)
            FROM (SELECT FROM fanned_out WHERE parked_at IS NULL AND lease_owner IS NULL LIMIT 1) anything_due
            WHERE $2::text IS NOT NULL
        ), unparked AS (
            -- These events are final now: each queue of their users whose head was parked
            -- behind one of them may go on (the claim parks it again if it is still blocked),
            -- due from when it was made, so that the claim takes it before what came after.
            UPDATE deliveries d SET parked_at = NULL, due_at = least(d.created_at, now())
            FROM (SELECT DISTINCT user_id FROM finished) u
            CROSS JOIN LATERAL (
                SELECT h.id FROM subscriptions s CROSS JOIN LATERAL (
                    SELECT p.id FROM deliveries p
                    WHERE p.user_id = u.user_id AND p.subscription_id = s.id
                      AND p.status = 'pending' AND p.parked_at IS NOT NULL
                    ORDER BY p.sequence LIMIT 1) h
                WHERE s.ordered AND s.deleted_at IS NULL) head
            -- A probe per row (not an anti-join, which would read every pending delivery).
            WHERE d.id = head.id
              AND (SELECT 1 FROM deliveries p
                   WHERE p.subscription_id = d.subscription_id AND p.user_id = d.user_id
                     AND p.sequence < d.sequence AND p.status = 'pending'
                   LIMIT 1) IS NULL
            RETURNING d.id
        )
        SELECT f.position, ARRAY(SELECT o.id FROM fanned_out o WHERE o.event_id = f.event_id AND o.lease_owner IS NOT NULL),
               EXISTS (SELECT 1 FROM fanned_out WHERE parked_at IS NULL AND lease_owner IS NULL) OR EXISTS (SELECT 1 FROM unparked)
        FROM finished f CROSS JOIN (SELECT count(*) FROM woken) sent
        """

    static let bindingDataTypes: [PostgresDataType] = [.text, .text]

    typealias Row = (Int, [Int64]?, Bool)

    var rows: String
    var wakePayload: String?

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(rows)
        bindings.append(wakePayload)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
