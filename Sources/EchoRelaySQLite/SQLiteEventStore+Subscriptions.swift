import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    public func createSubscription(_ fields: SubscriptionFields, ownerTokenID: String?, secret: String, limit: Int?,
                                   audit: AuditNote?) async throws -> Subscription {
        let id = "sub_" + RandomID.make()
        let types = (fields.eventTypes ?? []).map(\.rawValue)
        let description = fields.description ?? nil
        let stored = try SecretSealer.stored(secret, subscriptionID: id, with: sealer)
        // One write transaction: writers take turns, so the count cannot be passed by two at once.
        return try await session.write { db in
            if let limit, let ownerTokenID {
                let count = try await db.row("SELECT count(*) FROM subscriptions WHERE owner_token_id = ?1 AND deleted_at IS NULL",
                                             [ownerTokenID])?.int(0) ?? 0
                guard count < limit else { throw SubscriptionLimitReached(limit: limit) }
            }
            // seq is the list order and cursor: the next number, safe with one writer.
            guard let row = try await db.row("""
                INSERT INTO subscriptions (id, seq, owner_token_id, url, event_types, description, ordered, secret,
                                           created_at, updated_at)
                VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM subscriptions), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                RETURNING \(Subscription.columns)
                """, [id, ownerTokenID, fields.url ?? "", JSONText(types), description, fields.ordered ?? true, stored, db.now])
            else { throw StoreError.unexpected("insert returned no row") }
            try await Self.audit(db, audit, target: id)
            return try Subscription(row: row)
        }
    }

    public func subscriptions(owner: String?, cursor: String?, limit: Int) async throws -> SubscriptionPage {
        let after = try SubscriptionPage.seq(after: cursor)
        return try await session.read { db in
            let rows = try await db.rows("""
                SELECT \(Subscription.columns) FROM subscriptions
                WHERE deleted_at IS NULL AND seq > ?1 AND (?2 IS NULL OR owner_token_id = ?2)
                ORDER BY seq LIMIT ?3
                """, [after, owner, limit + 1])
            return try SubscriptionPage(rows: rows, limit: limit)
        }
    }

    public func subscription(id: String) async throws -> Subscription? {
        try await session.read { db in
            try await db.row("""
                SELECT \(Subscription.columns) FROM subscriptions WHERE id = ?1 AND deleted_at IS NULL
                """, [id]).map(Subscription.init(row:))
        }
    }

    public func subscriptions(ids: [String]) async throws -> [Subscription] {
        guard !ids.isEmpty else { return [] }
        return try await session.read { db in
            try await db.rows("""
                SELECT \(Subscription.columns) FROM subscriptions
                WHERE id IN (SELECT value FROM json_each(?1)) AND deleted_at IS NULL
                """, [JSONText(ids)]).map(Subscription.init(row:))
        }
    }

    public func updateSubscription(id: String, _ fields: SubscriptionFields, audit: AuditNote?) async throws -> Subscription? {
        let types = fields.eventTypes.map { JSONText($0.map(\.rawValue)) }
        let setDescription = fields.description != nil
        let description = fields.description ?? nil
        return try await changed(id: id, audit: audit) { db in
            try await db.row("""
                UPDATE subscriptions
                SET url = coalesce(?1, url),
                    event_types = coalesce(?2, event_types),
                    description = CASE WHEN ?3 THEN ?4 ELSE description END,
                    ordered = coalesce(?5, ordered),
                    updated_at = ?6
                WHERE id = ?7 AND deleted_at IS NULL
                RETURNING \(Subscription.columns)
                """, [fields.url, types, setDescription, description, fields.ordered, db.now, id])
        }
    }

    public func deleteSubscription(id: String, audit: AuditNote?) async throws -> Bool {
        try await session.write { db in
            let deleted = try await db.rows("""
                UPDATE subscriptions SET deleted_at = ?1, enabled = 0, updated_at = ?1
                WHERE id = ?2 AND deleted_at IS NULL RETURNING id
                """, [db.now, id]).count
            guard deleted == 1 else { return false }
            try await db.run("""
                UPDATE deliveries SET status = 'cancelled', finished_at = ?1, lease_owner = NULL, lease_expires_at = NULL
                WHERE subscription_id = ?2 AND status = 'pending'
                """, [db.now, id])
            try await Self.audit(db, audit, target: id)
            return true
        }
    }

    public func setSubscriptionEnabled(id: String, _ enabled: Bool, reason: String?, audit: AuditNote?) async throws -> Subscription? {
        try await changed(id: id, audit: audit) { db in
            try await db.row("""
                UPDATE subscriptions
                SET enabled = ?1, disabled_reason = CASE WHEN ?1 THEN NULL ELSE ?2 END,
                    failing_since = CASE WHEN ?1 THEN NULL ELSE failing_since END, updated_at = ?3
                WHERE id = ?4 AND deleted_at IS NULL
                RETURNING \(Subscription.columns)
                """, [enabled, reason, db.now, id])
        }
    }

    public func rotateSubscriptionSecret(id: String, newSecret: String, overlap: Duration, audit: AuditNote?) async throws -> Subscription? {
        // The previous secret moves as it is stored: sealed or not, it belongs to the same row.
        let stored = try SecretSealer.stored(newSecret, subscriptionID: id, with: sealer)
        return try await changed(id: id, audit: audit) { db in
            try await db.row("""
                UPDATE subscriptions
                SET previous_secret = secret, previous_secret_expires_at = ?1, secret = ?2, updated_at = ?3
                WHERE id = ?4 AND deleted_at IS NULL
                RETURNING \(Subscription.columns)
                """, [db.now + overlap.microseconds, stored, db.now, id])
        }
    }

    /// Runs one change of subscription `id` that returns its row, with its audit entry in the
    /// same transaction (none when no row changed).
    private func changed(id: String, audit: AuditNote?, _ change: (SQLiteDB) async throws -> Row?) async throws -> Subscription? {
        try await session.write { db in
            guard let row = try await change(db) else { return nil }
            try await Self.audit(db, audit, target: id)
            return try Subscription(row: row)
        }
    }

    public func resealSubscriptionSecrets() async throws -> Int {
        guard let sealer else { throw SecretSealerError.notConfigured }
        // One transaction: a secret that does not open stops it, and nothing is changed.
        return try await session.write { db in
            var changed = 0
            for row in try await db.rows("SELECT \(SecretSealer.resealColumns) FROM subscriptions ORDER BY seq") {
                guard let change = try sealer.reseal(row: row) else { continue }
                try await db.run("""
                    UPDATE subscriptions SET secret = coalesce(?1, secret), previous_secret = coalesce(?2, previous_secret)
                    WHERE id = ?3
                    """, [change.secret, change.previous, change.id])
                changed += 1
            }
            return changed
        }
    }
}
