import EchoRelayCore
import PostgresNIO

extension PostgresEventStore: SecurityEventStore {
    public func receiveSecurityEvent(_ received: ReceivedSecurityEvent) async throws -> SecurityEventReceipt {
        try await transaction { connection in
            var disposition = received.disposition
            if case .update(let type, .phoneNumber(let number), let phone, let occurredAt) = disposition {
                let users = try await connection.query(
                    "SELECT user_id FROM users WHERE phone_number = \(number) LIMIT 2", logger: logger
                ).decode(String.self).gathered()
                disposition = users.count == 1
                    ? .update(type, user: .user(users[0]), phoneNumber: phone, occurredAt: occurredAt)
                    : .unmatched(users.isEmpty ? "no user has this verified phone number" : "several users have this verified phone number")
            }
            let (kind, note, state) = disposition.columns
            let recorded = try await connection.query("""
                INSERT INTO security_events (issuer, jti, event_type, issued_at, subject, fingerprint, disposition,
                                             note, verification_state)
                VALUES (\(received.issuer), \(received.jti), \(received.eventType), \(received.issuedAt), \(received.subject),
                        \(ByteBuffer(bytes: received.fingerprint)), \(kind.rawValue), \(note), \(state))
                ON CONFLICT (issuer, jti) DO NOTHING
                RETURNING number
                """, logger: logger).decode(Int64.self).gathered()
            guard !recorded.isEmpty else { return SecurityEventReceipt.duplicate }
            guard case .update(let type, .user(let userID), let phone, let occurredAt) = disposition else {
                return .recorded(kind, event: nil)
            }
            // As the ingest statement does for a pushed event: the user's next sequence, the
            // event (no echo credentials: its signature was checked), its work item.
            let eventID = received.eventID
            let sequence = try await connection.query("""
                INSERT INTO user_sequences AS s (user_id, last_sequence) VALUES (\(userID), 1)
                ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + 1
                RETURNING last_sequence
                """, logger: logger).decode(Int64.self).gathered().first ?? 0
            try await connection.query("""
                INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, pushed_phone_number, source, path)
                VALUES (\(eventID), \(userID), \(sequence), \(type.rawValue), \(occurredAt),
                        \(ByteBuffer(bytes: received.fingerprint)), \(phone), 'set', 'set')
                """, logger: logger)
            try await connection.query(
                "INSERT INTO work_items (kind, event_id, user_id) VALUES ('verify', \(eventID), \(userID))", logger: logger
            )
            try await connection.query("""
                UPDATE security_events SET event_id = \(eventID) WHERE issuer = \(received.issuer) AND jti = \(received.jti)
                """, logger: logger)
            if let wakePayload = wakeOtherProcesses?.next() {
                try await connection.query(
                    "SELECT pg_notify(\(PostgresWorkNotifications.channel), \(wakePayload))", logger: logger
                )
            }
            return .recorded(.event, event: IngestReceipt(id: eventID, sequence: sequence, isDuplicate: false))
        }
    }

    public func securityEvents(disposition: SecurityEventDisposition?, before: Int64?, limit: Int) async throws -> [SecurityEventRecord] {
        try await rows("""
            SELECT \(unescaped: SecurityEventRecord.columns) FROM security_events
            WHERE (\(disposition?.rawValue)::text IS NULL OR disposition = \(disposition?.rawValue))
              AND (\(before)::int8 IS NULL OR number < \(before))
            ORDER BY number DESC LIMIT \(limit)
            """, SecurityEventRecord.init(row:))
    }

    public func securityEvent(eventID: String) async throws -> SecurityEventRecord? {
        try await rows(
            "SELECT \(unescaped: SecurityEventRecord.columns) FROM security_events WHERE event_id = \(eventID)",
            SecurityEventRecord.init(row:)
        ).first
    }
}
