import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    public func receiveSecurityEvent(_ received: ReceivedSecurityEvent) async throws -> SecurityEventReceipt {
        try await session.write { db in
            let earlier = try await db.row("SELECT disposition FROM security_events WHERE issuer = ?1 AND jti = ?2",
                                           [received.issuer, received.jti])
            // A SET refused when it was polled before takes the refused one's place.
            if let earlier {
                guard try earlier.string(0) == SecurityEventDisposition.refused.rawValue else { return SecurityEventReceipt.duplicate }
                try await db.run("DELETE FROM security_events WHERE issuer = ?1 AND jti = ?2", [received.issuer, received.jti])
            }
            let disposition = try await received.disposition.matched { column, value in
                try await db.rows("SELECT user_id FROM users WHERE \(column) = ?1 LIMIT 2", [value]).map { try $0.string(0) }
            }
            let (kind, note, state) = disposition.columns
            if let verified = received.verifiedEmail {
                try await db.run("UPDATE users SET email = ?1 WHERE user_id = ?2", [verified.email, verified.userID])
            }
            var event: IngestReceipt?
            if case .update(let type, .user(let userID), let phone, let occurredAt, let reason) = disposition {
                // As ingest does for a pushed event: the user's next sequence, the event (no
                // echo credentials: its signature was checked), its work item.
                guard let sequence = try await db.row("""
                    INSERT INTO user_sequences (user_id, last_sequence) VALUES (?1, 1)
                    ON CONFLICT (user_id) DO UPDATE SET last_sequence = last_sequence + 1
                    RETURNING last_sequence
                    """, [userID])?.int64(0) else { throw StoreError.unexpected("sequence upsert returned no row") }
                try await db.run("""
                    INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint, pushed_phone_number, source,
                                        path, reason)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'set', 'set', ?9)
                    """, [received.eventID, userID, sequence, type.rawValue, occurredAt, db.now, Blob(received.fingerprint), phone, reason])
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

    public func recordRefusedSecurityEvent(_ refused: RefusedSecurityEvent) async throws {
        try await session.write { db in
            try await db.run("""
                INSERT INTO security_events (issuer, jti, event_type, issued_at, received_at, fingerprint, disposition, note)
                VALUES (?1, ?2, '', ?3, ?3, ?4, 'refused', ?5)
                ON CONFLICT (issuer, jti) DO NOTHING
                """, [refused.issuer, refused.jti, db.now, Blob(refused.fingerprint), refused.note])
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

    public func securityEventStream() async throws -> SecurityEventStream? {
        try await session.read { db in
            try await db.row("SELECT \(SecurityEventStream.columns) FROM set_stream").map(SecurityEventStream.init(row:))
        }
    }

    public func saveSecurityEventStream(_ stream: SecurityEventStream) async throws {
        let verification = stream.verification
        try await session.write { db in
            try await db.run("""
                INSERT OR REPLACE INTO set_stream (singleton, stream_id, delivery, endpoint_url, configuration, status, status_reason,
                                                   status_checked_at, verification_state, verification_requested_at,
                                                   verification_outcome, verification_elapsed_ms, created_at, updated_at)
                VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                """, [stream.streamID, stream.delivery.rawValue, stream.endpointURL, stream.configuration, stream.status?.rawValue,
                      stream.statusReason, stream.statusCheckedAt, verification?.state, verification?.requestedAt,
                      verification?.outcome.rawValue, SecurityEventStream.milliseconds(verification?.elapsed), stream.createdAt, db.now])
        }
    }

    public func verificationEvent(after: Int64?) async throws -> (number: Int64, state: String?)? {
        try await session.read { db in
            try await db.row("""
                SELECT number, verification_state FROM security_events
                WHERE disposition = 'verification' AND (?1 IS NULL OR number > ?1)
                ORDER BY number DESC LIMIT 1
                """, [after]).map { (number: try $0.int64(0), state: try $0.optionalString(1)) }
        }
    }

    public func newestSecurityEventNumber() async throws -> Int64? {
        try await session.read { db in try await db.row("SELECT max(number) FROM security_events")?.optionalInt(0).map(Int64.init) }
    }

    /// One process owns the embedded file (its file lock), so it always holds the poller's lock.
    public func withPollerLock(_ body: @Sendable (_ stillHeld: @Sendable () async -> Bool) async throws -> Void) async throws -> Bool {
        try await body({ true })
        return true
    }
}
