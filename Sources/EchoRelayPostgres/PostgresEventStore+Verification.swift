import EchoRelayCore
import Foundation
import Logging
import PostgresNIO

extension PostgresEventStore {
    public func claimVerifications(owner: String, limit: Int, lease: Duration) async throws -> [VerificationTask] {
        do {
            // One statement: pick due items (skipping those another worker is locking),
            // lease them by moving their due time to the lease's end, and read their events.
            let rows = try await client.query("""
                WITH claimed AS (
                    SELECT id FROM work_items
                    WHERE kind = 'verify' AND due_at <= now()
                    ORDER BY due_at
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE work_items AS w
                SET lease_owner = \(owner),
                    lease_expires_at = now() + make_interval(secs => \(lease.seconds)),
                    due_at = now() + make_interval(secs => \(lease.seconds)),
                    attempts = w.attempts + 1
                FROM claimed, events AS e
                WHERE w.id = claimed.id AND e.id = w.event_id
                RETURNING w.id, w.attempts, e.id, e.type, e.user_id, e.sequence, e.occurred_at,
                          e.pushed_phone_number, e.echo_service_provider, e.echo_authorization
                """, logger: logger)
            var tasks: [VerificationTask] = []
            for try await (itemID, attempts, eventID, type, userID, sequence, occurredAt, phone, provider, authorization)
                in rows.decode((Int64, Int, String, String, String, Int64, Date, String?, String?, String?).self) {
                guard let type = EventType(rawValue: type) else { throw StoreError.unexpected("event \(eventID) has an unknown type") }
                let echo = provider.flatMap { provider in
                    authorization.map { EchoCredentials(serviceProvider: provider, authorization: Secret($0)) }
                }
                tasks.append(VerificationTask(
                    workItemID: itemID, eventID: eventID, type: type, userID: userID, sequence: sequence,
                    occurredAt: occurredAt, pushedPhoneNumber: phone, echo: echo, attempts: attempts
                ))
            }
            return tasks
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func finishVerification(_ task: VerificationTask, owner: String, outcome: VerificationOutcome) async throws -> Bool {
        do {
            return try await client.withTransaction(logger: logger) { connection in
                // Deleting the item first proves the lease is still ours and locks it.
                let deleted = try await connection.query(
                    "DELETE FROM work_items WHERE id = \(task.workItemID) AND lease_owner = \(owner) RETURNING id",
                    logger: logger
                ).collect().count
                guard deleted == 1 else { return false }

                let verified = outcome.status == .verified
                try await connection.query("""
                    UPDATE events
                    SET status = \(outcome.status.rawValue), status_reason = \(outcome.reason.rawValue),
                        decided_at = now(), verified_at = CASE WHEN \(verified) THEN now() END,
                        provider_user_id = \(outcome.providerUserID), provider_phone_number = \(outcome.providerPhoneNumber),
                        echo_service_provider = NULL, echo_authorization = NULL
                    WHERE id = \(task.eventID)
                    """, logger: logger)

                if let hash = outcome.confirmedTokenHash {
                    try await connection.query("""
                        INSERT INTO verified_tokens (user_id, token_sha256) VALUES (\(task.userID), \(Data(hash)))
                        ON CONFLICT (user_id, token_sha256) DO UPDATE SET last_verified_at = now()
                        """, logger: logger)
                }
                if verified {
                    let state: UserState.State = task.type == .accountDeactivated ? .deactivated : .active
                    let phone = task.type == .accountDeactivated ? nil : outcome.providerPhoneNumber
                    // Only a newer sequence moves the state: a late older event changes nothing.
                    try await connection.query("""
                        INSERT INTO users (user_id, state, phone_number, last_sequence, last_event_at)
                        VALUES (\(task.userID), \(state.rawValue), \(phone), \(task.sequence), \(task.occurredAt))
                        ON CONFLICT (user_id) DO UPDATE
                        SET state = EXCLUDED.state,
                            phone_number = COALESCE(EXCLUDED.phone_number, users.phone_number),
                            last_sequence = EXCLUDED.last_sequence, last_event_at = EXCLUDED.last_event_at,
                            updated_at = now()
                        WHERE users.last_sequence < EXCLUDED.last_sequence
                        """, logger: logger)
                    try await Self.fanOut(task, on: connection, logger: logger)
                }
                return true
            }
        } catch {
            throw StoreError.wrap(error)
        }
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

    public func user(id: String) async throws -> UserState? {
        do {
            let rows = try await client.query("""
                SELECT user_id, state, phone_number, last_sequence, last_event_at, updated_at
                FROM users WHERE user_id = \(id)
                """, logger: logger)
            for try await (userID, state, phone, sequence, lastEventAt, updatedAt)
                in rows.decode((String, String, String?, Int64, Date, Date).self) {
                guard let state = UserState.State(rawValue: state) else { throw StoreError.unexpected("user has an unknown state") }
                return UserState(userID: userID, state: state, phoneNumber: phone, lastSequence: sequence,
                                 lastEventAt: lastEventAt, updatedAt: updatedAt)
            }
            return nil
        } catch {
            throw StoreError.wrap(error)
        }
    }
}

extension Duration {
    /// The duration in (fractional) seconds, for SQL intervals.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
