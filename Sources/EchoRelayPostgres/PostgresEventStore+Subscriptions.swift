import EchoRelayCore
import EchoRelaySQL
import PostgresNIO

extension PostgresEventStore: SubscriptionStore {
    public func createSubscription(_ fields: SubscriptionFields, ownerTokenID: String?, secret: String, limit: Int?,
                                   audit: AuditNote?) async throws -> Subscription {
        let id = "sub_" + RandomID.make()
        let types = (fields.eventTypes ?? []).map(\.rawValue)
        let description = fields.description ?? nil
        let stored = try SecretSealer.stored(secret, subscriptionID: id, with: sealer)
        return try await transaction { connection in
            if let limit, let ownerTokenID {
                // The owner's token row, locked, makes concurrent creations of one owner
                // take turns, so the count cannot be passed by two at once.
                _ = try await connection.query("SELECT 1 FROM access_tokens WHERE id = \(ownerTokenID) FOR UPDATE",
                                               logger: logger).collect()
                let count = try await connection.query("""
                    SELECT count(*)::bigint FROM subscriptions WHERE owner_token_id = \(ownerTokenID) AND deleted_at IS NULL
                    """, logger: logger).decode(Int.self).gathered().first ?? 0
                guard count < limit else { throw SubscriptionLimitReached(limit: limit) }
            }
            let created = try await connection.query("""
                INSERT INTO subscriptions (id, owner_token_id, url, event_types, description, ordered, secret)
                VALUES (\(id), \(ownerTokenID), \(fields.url ?? ""), \(types), \(description), \(fields.ordered ?? true), \(stored))
                RETURNING \(unescaped: Subscription.columns)
                """, logger: logger).storeRows().first.map(Subscription.init(row:))
            guard let created else { throw StoreError.unexpected("insert returned no row") }
            try await Self.audit(on: connection, logger: logger, audit, target: id)
            return created
        }
    }

    public func subscriptions(owner: String?, cursor: String?, limit: Int) async throws -> SubscriptionPage {
        let after = try SubscriptionPage.seq(after: cursor)
        return try await wrapped {
            let rows = try await client.query("""
                SELECT \(unescaped: Subscription.columns) FROM subscriptions
                WHERE deleted_at IS NULL AND seq > \(after) AND (\(owner)::text IS NULL OR owner_token_id = \(owner))
                ORDER BY seq LIMIT \(limit + 1)
                """, logger: logger)
            return try SubscriptionPage(rows: try await rows.storeRows(), limit: limit)
        }
    }

    public func subscriptions(ids: [String]) async throws -> [Subscription] {
        guard !ids.isEmpty else { return [] }
        return try await rows("""
            SELECT \(unescaped: Subscription.columns) FROM subscriptions WHERE id = ANY (\(ids)) AND deleted_at IS NULL
            """, Subscription.init(row:))
    }

    public func subscription(id: String) async throws -> Subscription? {
        try await rows("""
            SELECT \(unescaped: Subscription.columns) FROM subscriptions WHERE id = \(id) AND deleted_at IS NULL
            """, Subscription.init(row:)).first
    }

    public func updateSubscription(id: String, _ fields: SubscriptionFields, audit: AuditNote?) async throws -> Subscription? {
        let types = fields.eventTypes?.map(\.rawValue)
        let setDescription = fields.description != nil
        let description = fields.description ?? nil
        return try await changed(id: id, audit: audit, """
            UPDATE subscriptions
            SET url = coalesce(\(fields.url), url),
                event_types = coalesce(\(types), event_types),
                description = CASE WHEN \(setDescription) THEN \(description) ELSE description END,
                ordered = coalesce(\(fields.ordered), ordered),
                updated_at = now()
            WHERE id = \(id) AND deleted_at IS NULL
            RETURNING \(unescaped: Subscription.columns)
            """)
    }

    public func deleteSubscription(id: String, audit: AuditNote?) async throws -> Bool {
        do {
            return try await client.withTransaction(logger: logger) { connection in
                // Rows are locked deliveries first, then the subscription, the order a delivery
                // worker recording an attempt takes them in; the other order deadlocks with it.
                _ = try await connection.query("""
                    SELECT id FROM deliveries WHERE subscription_id = \(id) AND status = 'pending' ORDER BY id FOR UPDATE
                    """, logger: logger).collect()
                let deleted = try await connection.query("""
                    UPDATE subscriptions SET deleted_at = now(), enabled = false, updated_at = now()
                    WHERE id = \(id) AND deleted_at IS NULL RETURNING id
                    """, logger: logger).collect().count
                guard deleted == 1 else { return false }
                try await connection.query("""
                    UPDATE deliveries SET status = 'cancelled', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
                    WHERE subscription_id = \(id) AND status = 'pending'
                    """, logger: logger)
                try await Self.audit(on: connection, logger: logger, audit, target: id)
                return true
            }
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func setSubscriptionEnabled(id: String, _ enabled: Bool, reason: String?, audit: AuditNote?) async throws -> Subscription? {
        try await changed(id: id, audit: audit, """
            UPDATE subscriptions
            SET enabled = \(enabled), disabled_reason = CASE WHEN \(enabled) THEN NULL ELSE \(reason) END,
                failing_since = CASE WHEN \(enabled) THEN NULL ELSE failing_since END, updated_at = now()
            WHERE id = \(id) AND deleted_at IS NULL
            RETURNING \(unescaped: Subscription.columns)
            """)
    }

    public func rotateSubscriptionSecret(id: String, newSecret: String, overlap: Duration, audit: AuditNote?) async throws -> Subscription? {
        // The previous secret moves as it is stored: sealed or not, it belongs to the same row.
        let stored = try SecretSealer.stored(newSecret, subscriptionID: id, with: sealer)
        return try await changed(id: id, audit: audit, """
            UPDATE subscriptions
            SET previous_secret = secret, previous_secret_expires_at = now() + make_interval(secs => \(overlap.seconds)),
                secret = \(stored), updated_at = now()
            WHERE id = \(id) AND deleted_at IS NULL
            RETURNING \(unescaped: Subscription.columns)
            """)
    }

    /// Runs one change of subscription `id` that returns its row, with its audit entry in the
    /// same transaction (none when no row changed).
    private func changed(id: String, audit: AuditNote?, _ statement: PostgresQuery) async throws -> Subscription? {
        try await transaction { connection in
            guard let row = try await connection.query(statement, logger: logger).storeRows().first else { return nil }
            try await Self.audit(on: connection, logger: logger, audit, target: id)
            return try Subscription(row: row)
        }
    }
}

extension PostgresEventStore {
    public func resealSubscriptionSecrets() async throws -> Int {
        guard let sealer else { throw SecretSealerError.notConfigured }
        // A sealing error comes out of `transaction` as it is, and nothing is changed.
        return try await transaction { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: SecretSealer.resealColumns) FROM subscriptions ORDER BY seq FOR UPDATE", logger: logger
            )
            let changes = try await rows.storeRows().compactMap { try sealer.reseal(row: $0) }
            for change in changes {
                try await connection.query("""
                    UPDATE subscriptions
                    SET secret = coalesce(\(change.secret), secret),
                        previous_secret = coalesce(\(change.previous), previous_secret)
                    WHERE id = \(change.id)
                    """, logger: logger)
            }
            return changes.count
        }
    }
}
