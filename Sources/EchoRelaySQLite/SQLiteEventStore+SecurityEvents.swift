import EchoRelayCore

extension SQLiteEventStore {
    public func receiveSecurityEvent(_ received: ReceivedSecurityEvent) async throws -> SecurityEventReceipt {
        try await session.write { db in
            if try await db.row("SELECT 1 FROM security_events WHERE issuer = ?1 AND jti = ?2", [received.issuer, received.jti]) != nil {
                return SecurityEventReceipt.duplicate
            }
            var disposition = received.disposition
            if case .update(let type, .phoneNumber(let number), let phone, let occurredAt) = disposition {
                let users = try await db.rows("SELECT user_id FROM users WHERE phone_number = ?1 LIMIT 2", [number])
                disposition = users.count == 1
                    ? .update(type, user: .user(try users[0].string(0)), phoneNumber: phone, occurredAt: occurredAt)
                    : .unmatched(users.isEmpty ? "no user has this verified phone number" : "several users have this verified phone number")
            }
            let (kind, note, state) = disposition.columns
            var event: IngestReceipt?
            if case .update(let type, .user(let userID), let phone, let occurredAt) = disposition {
                // As ingest does for a pushed event: the user's next sequence, the event (no
                // echo credentials: its signature was checked), its work item.
                guard let sequence = try await db.row("""
                    INSERT INTO user_sequences (user_id, last_sequence) VALUES (?1, 1)
                    ON CONFLICT (user_id) DO UPDATE SET last_sequence = last_sequence + 1
                    RETURNING last_sequence
                    """, [userID])?.int64(0) else { throw StoreError.unexpected("sequence upsert returned no row") }
                try await db.run("""
                    INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint, pushed_phone_number, source, path)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'set', 'set')
                    """, [received.eventID, userID, sequence, type.rawValue, occurredAt, db.now, Blob(received.fingerprint), phone])
                try await db.run("INSERT INTO work_items (kind, event_id, due_at, created_at) VALUES ('verify', ?1, ?2, ?2)",
                                 [received.eventID, db.now])
                event = IngestReceipt(id: received.eventID, sequence: sequence, isDuplicate: false)
            }
            try await db.run("""
                INSERT INTO security_events (issuer, jti, event_type, issued_at, received_at, subject, fingerprint, disposition,
                                             note, verification_state, event_id)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                """, [received.issuer, received.jti, received.eventType, received.issuedAt, db.now, received.subject,
                      Blob(received.fingerprint), kind.rawValue, note, state, event?.id])
            return .recorded(kind, event: event)
        }
    }

    public func securityEvents(disposition: SecurityEventDisposition?, before: Int64?, limit: Int) async throws -> [SecurityEventRecord] {
        try await session.read { db in
            try await db.rows("""
                SELECT \(SecurityEventRecord.columns) FROM security_events
                WHERE (?1 IS NULL OR disposition = ?1) AND (?2 IS NULL OR number < ?2)
                ORDER BY number DESC LIMIT ?3
                """, [disposition?.rawValue, before, limit]).map(SecurityEventRecord.init(row:))
        }
    }

    public func securityEvent(eventID: String) async throws -> SecurityEventRecord? {
        try await session.read { db in
            try await db.row("SELECT \(SecurityEventRecord.columns) FROM security_events WHERE event_id = ?1", [eventID])
                .map(SecurityEventRecord.init(row:))
        }
    }
}
