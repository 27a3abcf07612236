import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    public func claimVerifications(owner: String, limit: Int, lease: Duration) async throws -> [VerificationTask] {
        try await session.write { db in
            // Due items, oldest first; a leased item's due time is its lease's end, so it is
            // not due until the lease runs out. One writer at a time takes the place of
            // FOR UPDATE SKIP LOCKED: nobody else can claim between the pick and the lease.
            let ids = try await db.rows("""
                SELECT id FROM work_items WHERE kind = 'verify' AND due_at <= ?1 ORDER BY due_at, id LIMIT ?2
                """, [db.now, limit]).map { try $0.int64(0) }
            guard !ids.isEmpty else { return [] }
            let leaseEnd = db.now + lease.microseconds
            try await db.run("""
                UPDATE work_items SET lease_owner = ?1, lease_expires_at = ?2, due_at = ?2, attempts = attempts + 1
                WHERE id IN (SELECT value FROM json_each(?3))
                """, [owner, leaseEnd, JSONText(.array(ids.map(JSONValue.integer)))])
            let rows = try await db.rows("""
                SELECT w.id, w.attempts, e.id, e.type, e.user_id, e.sequence, e.occurred_at,
                       e.pushed_phone_number, e.echo_service_provider, e.echo_authorization, e.source,
                       e.oauth2_access_token, e.path
                FROM work_items w JOIN events e ON e.id = w.event_id
                WHERE w.id IN (SELECT value FROM json_each(?1))
                """, [JSONText(.array(ids.map(JSONValue.integer)))])
            var tasks: [Int64: VerificationTask] = [:]
            for row in rows {
                let eventID = try row.string(2)
                guard let type = EventType(rawValue: try row.string(3)), let source = EventSource(rawValue: try row.string(10)),
                      let path = VerificationPath(rawValue: try row.string(12)) else {
                    throw StoreError.unexpected("event \(eventID) has an unknown type, source or path")
                }
                let provider = try row.optionalString(8), authorization = try row.optionalString(9)
                let echo = provider.flatMap { provider in
                    authorization.map { EchoCredentials(serviceProvider: provider, authorization: Secret($0)) }
                }
                let itemID = try row.int64(0)
                tasks[itemID] = VerificationTask(
                    workItemID: itemID, eventID: eventID, type: type, userID: try row.string(4), sequence: try row.int64(5),
                    occurredAt: try row.date(6), pushedPhoneNumber: try row.optionalString(7), echo: echo,
                    oauth2: try row.optionalString(11).map { OAuth2Credentials(accessToken: Secret($0)) },
                    attempts: try row.int(1), source: source, path: path
                )
            }
            return ids.compactMap { tasks[$0] }
        }
    }

    /// The embedded store hands no deliveries off yet: its one process claims the deliveries
    /// it makes, and a claim here is a local read, not a round trip.
    public func finishVerification(
        _ task: VerificationTask, owner: String, outcome: VerificationOutcome, handOff: HandOff?
    ) async throws -> FinishedWork {
        let finish = VerificationFinish(task: task, owner: owner, outcome: outcome, handOff: handOff)
        return try await writeVerificationFinishes(within: .seconds(60)) { [finish] }[0].get()
    }

    /// One transaction for the batch (see `writeBatch`).
    public func writeVerificationFinishes(
        within limit: Duration, take: @escaping @Sendable () -> [VerificationFinish]
    ) async throws -> [Result<FinishedWork, any Error>] {
        try await Self.writeBatch("verification outcomes", take: take, session: session, logger: logger) { finishes, db in
            var results: [Result<FinishedWork, any Error>] = []
            for finish in finishes { results.append(.success(FinishedWork(kept: try await Self.finish(finish, db: db)))) }
            return results
        }
    }

    /// One outcome inside the caller's transaction; false, writing nothing, when the lease is no longer `owner`'s.
    static func finish(_ finish: VerificationFinish, db: SQLiteDB) async throws -> Bool {
        let (task, owner, outcome) = (finish.task, finish.owner, finish.outcome)
        // Deleting the item first proves the lease is still ours.
        let deleted = try await db.rows(
            "DELETE FROM work_items WHERE id = ?1 AND lease_owner = ?2 RETURNING id", [task.workItemID, owner]
        ).count
        guard deleted == 1 else { return false }

        let verified = outcome.status == .verified
        try await db.run("""
            UPDATE events
            SET status = ?1, status_reason = ?2, decided_at = ?3, verified_at = ?4,
                provider_user_id = ?5, provider_phone_number = ?6,
                echo_service_provider = NULL, echo_authorization = NULL, oauth2_access_token = NULL
            WHERE id = ?7
            """, [outcome.status.rawValue, outcome.reason.rawValue, db.now, verified ? db.now : nil,
                  outcome.providerUserID, outcome.providerPhoneNumber, task.eventID])

        if let hash = outcome.confirmedTokenHash {
            // Its newest confirmation, and its newest rotation (see PostgreSQL's finish statement).
            try await db.run("""
                INSERT INTO verified_tokens (user_id, token_sha256, first_verified_at, last_verified_at, expires_at,
                                             last_sequence, rotated_sequence)
                VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6)
                ON CONFLICT (user_id, token_sha256) DO UPDATE
                SET last_verified_at = excluded.last_verified_at,
                    expires_at = coalesce(excluded.expires_at, verified_tokens.expires_at),
                    last_sequence = max(coalesce(verified_tokens.last_sequence, excluded.last_sequence), excluded.last_sequence),
                    rotated_sequence = coalesce(max(verified_tokens.rotated_sequence, excluded.rotated_sequence),
                                                verified_tokens.rotated_sequence, excluded.rotated_sequence)
                """, [task.userID, Blob(hash), db.now, outcome.confirmedTokenExpiry, task.sequence,
                      task.type.descriptor.replacesToken ? task.sequence : nil])
        }
        if verified {
            let state = task.type.descriptor.userStateAfter
            let phone = state == .deactivated ? nil : outcome.providerPhoneNumber
            // Only a newer sequence moves the state: a late older event changes nothing.
            try await db.run("""
                INSERT INTO users (user_id, state, phone_number, last_sequence, last_event_at, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT (user_id) DO UPDATE
                SET state = excluded.state,
                    phone_number = coalesce(excluded.phone_number, users.phone_number),
                    last_sequence = excluded.last_sequence, last_event_at = excluded.last_event_at,
                    updated_at = excluded.updated_at
                WHERE users.last_sequence < excluded.last_sequence
                """, [task.userID, state.rawValue, phone, task.sequence, task.occurredAt, db.now])
            try await Self.fanOut(task, db: db)
        }
        // The event is final now: the user's queues parked behind it may go on.
        try await Self.unparkHeads(userID: task.userID, subscriptionID: nil, db: db)
        return true
    }
}

/// A verification outcome waiting for its shared transaction.
extension SQLiteEventStore {

    public func retryVerification(_ task: VerificationTask, owner: String, after delay: Duration) async throws -> Bool {
        try await session.read { db in
            try await db.rows("""
                UPDATE work_items SET due_at = ?1, lease_owner = NULL, lease_expires_at = NULL
                WHERE id = ?2 AND lease_owner = ?3
                RETURNING id
                """, [db.now + delay.microseconds, task.workItemID, owner]).count == 1
        }
    }

    public func releaseVerification(_ task: VerificationTask, owner: String) async throws {
        try await session.read { db in
            try await db.run("""
                UPDATE work_items
                SET due_at = ?1, lease_owner = NULL, lease_expires_at = NULL, attempts = max(attempts - 1, 0)
                WHERE id = ?2 AND lease_owner = ?3
                """, [db.now, task.workItemID, owner])
        }
    }

    public func isTokenConfirmed(userID: String, tokenHash: [UInt8]) async throws -> Bool {
        try await session.read { db in
            try await db.row(
                "SELECT 1 FROM verified_tokens WHERE user_id = ?1 AND token_sha256 = ?2", [userID, Blob(tokenHash)]
            ) != nil
        }
    }

    public func confirmedToken(userID: String, tokenHash: [UInt8]) async throws -> ConfirmedToken? {
        try await session.read { db in
            try await db.row("""
                SELECT t.expires_at, EXISTS (
                    SELECT 1 FROM verified_tokens o
                    WHERE o.user_id = t.user_id AND o.token_sha256 <> t.token_sha256 AND o.rotated_sequence > t.last_sequence)
                FROM verified_tokens t WHERE t.user_id = ?1 AND t.token_sha256 = ?2
                """, [userID, Blob(tokenHash)]).map { ConfirmedToken(expiresAt: try $0.optionalDate(0), superseded: try $0.bool(1)) }
        }
    }

    public func user(id: String) async throws -> UserState? {
        try await session.read { db in
            try await db.row("SELECT \(UserState.columns) FROM users WHERE user_id = ?1", [id]).map(UserState.init(row:))
        }
    }
}
