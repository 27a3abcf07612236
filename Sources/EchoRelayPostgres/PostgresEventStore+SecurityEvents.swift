import EchoRelayCore
import EchoRelaySQL
import PostgresNIO

extension PostgresEventStore: SecurityEventStore {
    public func receiveSecurityEvent(_ received: ReceivedSecurityEvent) async throws -> SecurityEventReceipt {
        try await durableTransaction { connection in
            let disposition = try await received.disposition.matched { column, value in
                try await connection.query(
                    "SELECT user_id FROM users WHERE \(unescaped: column) = \(value) LIMIT 2", logger: logger
                ).decode(String.self).gathered()
            }
            let (kind, note, state) = disposition.columns
            // A SET refused when it was polled before takes the refused one's place.
            let recorded = try await connection.query("""
                INSERT INTO security_events (issuer, jti, event_type, issued_at, subject, fingerprint, disposition,
                                             note, verification_state)
                VALUES (\(received.issuer), \(received.jti), \(received.eventType), \(received.issuedAt), \(received.subject),
                        \(ByteBuffer(bytes: received.fingerprint)), \(kind.rawValue), \(note), \(state))
                ON CONFLICT (issuer, jti) DO UPDATE SET
                    event_type = EXCLUDED.event_type, issued_at = EXCLUDED.issued_at, received_at = now(),
                    subject = EXCLUDED.subject, fingerprint = EXCLUDED.fingerprint, disposition = EXCLUDED.disposition,
                    note = EXCLUDED.note, verification_state = EXCLUDED.verification_state
                WHERE security_events.disposition = 'refused'
                RETURNING number
                """, logger: logger).decode(Int64.self).gathered()
            guard !recorded.isEmpty else { return SecurityEventReceipt.duplicate }
            if let verified = received.verifiedEmail {
                try await connection.query(
                    "UPDATE users SET email = \(verified.email) WHERE user_id = \(verified.userID)", logger: logger
                )
            }
            guard case .update(let type, .user(let userID), let phone, let occurredAt, let reason) = disposition else {
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
                INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, pushed_phone_number, source, path, reason)
                VALUES (\(eventID), \(userID), \(sequence), \(type.rawValue), \(occurredAt),
                        \(ByteBuffer(bytes: received.fingerprint)), \(phone), 'set', 'set', \(reason))
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

    /// Durable before the poller reports the refusal (`setErrs`) to the transmitter.
    public func recordRefusedSecurityEvent(_ refused: RefusedSecurityEvent) async throws {
        try await durableTransaction { connection in
            _ = try await connection.query("""
                INSERT INTO security_events (issuer, jti, event_type, issued_at, fingerprint, disposition, note)
                VALUES (\(refused.issuer), \(refused.jti), '', now(), \(ByteBuffer(bytes: refused.fingerprint)), 'refused',
                        \(refused.note))
                ON CONFLICT (issuer, jti) DO NOTHING
                """, logger: logger)
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

extension PostgresEventStore: SecurityEventStreamStore {
    public func securityEventStream() async throws -> SecurityEventStream? {
        try await rows("SELECT \(unescaped: SecurityEventStream.columns) FROM set_stream", SecurityEventStream.init(row:)).first
    }

    public func saveSecurityEventStream(_ stream: SecurityEventStream) async throws {
        let verification = stream.verification
        try await wrapped {
            try await client.query("""
                INSERT INTO set_stream (singleton, stream_id, delivery, endpoint_url, configuration, status, status_reason,
                                        status_checked_at, verification_state, verification_requested_at, verification_outcome,
                                        verification_elapsed_ms, created_at, updated_at)
                VALUES (true, \(stream.streamID), \(stream.delivery.rawValue), \(stream.endpointURL), \(stream.configuration),
                        \(stream.status?.rawValue), \(stream.statusReason), \(stream.statusCheckedAt), \(verification?.state),
                        \(verification?.requestedAt), \(verification?.outcome.rawValue),
                        \(SecurityEventStream.milliseconds(verification?.elapsed)), \(stream.createdAt), now())
                ON CONFLICT (singleton) DO UPDATE SET
                    stream_id = EXCLUDED.stream_id, delivery = EXCLUDED.delivery, endpoint_url = EXCLUDED.endpoint_url,
                    configuration = EXCLUDED.configuration, status = EXCLUDED.status, status_reason = EXCLUDED.status_reason,
                    status_checked_at = EXCLUDED.status_checked_at, verification_state = EXCLUDED.verification_state,
                    verification_requested_at = EXCLUDED.verification_requested_at,
                    verification_outcome = EXCLUDED.verification_outcome,
                    verification_elapsed_ms = EXCLUDED.verification_elapsed_ms, created_at = EXCLUDED.created_at,
                    updated_at = now()
                """, logger: logger)
        }
    }

    public func verificationEvent(after: Int64?) async throws -> (number: Int64, state: String?)? {
        try await rows("""
            SELECT number, verification_state FROM security_events
            WHERE disposition = 'verification' AND (\(after)::int8 IS NULL OR number > \(after))
            ORDER BY number DESC LIMIT 1
            """) { (number: try $0.int64(0), state: try $0.optionalString(1)) }.first
    }

    public func newestSecurityEventNumber() async throws -> Int64? {
        try await rows("SELECT max(number) FROM security_events") { try $0.optionalInt(0).map(Int64.init) }.first ?? nil
    }
}

extension PostgresEventStore: SecurityEventPollerLock {
    /// A session advisory lock on a connection held while `body` runs: PostgreSQL frees it
    /// when that connection ends, so a killed holder's lock is taken over at once.
    public func withPollerLock(_ body: @Sendable (_ stillHeld: @Sendable () async -> Bool) async throws -> Void) async throws -> Bool {
        let key: Int64 = 0x4543_484F_5345_5450  // "ECHOSETP"
        return try await wrapped {
            try await client.withConnection { connection in
                let taken = try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: logger)
                    .decode(Bool.self).gathered().first ?? false
                guard taken else { return false }
                let logger = self.logger
                // Freed before the connection goes back to the pool, whatever `body` did.
                let unlock = { _ = try? await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger) }
                do {
                    try await body({
                        guard !connection.isClosed else { return false }
                        return (try? await connection.query("SELECT 1", logger: logger).decode(Int.self).gathered()) != nil
                    })
                } catch {
                    await unlock()
                    throw error
                }
                await unlock()
                return true
            }
        }
    }
}
