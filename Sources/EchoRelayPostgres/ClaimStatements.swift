import EchoRelayCore
import EchoRelaySQL
import Foundation
import PostgresNIO

// The claims and the hand-off's load, prepared: each runs several times a second per
// process, and PostgreSQL spent longer planning them than executing them (0.3–0.5 ms of
// planning a call in the benchmark's pg_stat_statements). Their plans do not depend on the
// values bound; CachedPlanTests checks that their cached plans scan no queue table.

/// The delivery claim (see `PostgresEventStore.claimDeliveries`). Benchmarks/pgbench/
/// claim-deliveries.sql runs the same text with its parameters as pgbench variables: $1
/// :answered, $2 :cap, $3 :limit, $4 :owner, $5 :lease_seconds; ClaimStatementTests keeps the
/// two equal.
///
/// The leases that hold no slot ($1: webhooks answered, hand-offs waiting in memory, which
/// may be thousands under a backlog) are left out by a hashed anti-join, not `<> ALL`, which
/// compares every lease with every id.
///
/// Each subscription's due front is read and locked `room + 8` rows deep: the margin lets one
/// claim park a few blocked deliveries and still fill its room. It was 32, and locking those
/// rows (`FOR UPDATE` writes each one) was most of the claim's cost: 0.8 ms a call, 0.55 ms
/// with 8, in the claim part of scripts/bench. A front of more blocked deliveries than that
/// is parked over several claims.
struct ClaimDeliveriesStatement: PostgresPreparedStatement {
    static let sql = """
        WITH busy AS (
            SELECT subscription_id, count(*) AS n FROM deliveries
            WHERE status = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at > now()
              AND id NOT IN (SELECT unnest($1::int8[]))
            GROUP BY subscription_id
        ), open AS (
            SELECT s.id, s.ordered, s.event_types, $2 - coalesce(b.n, 0) AS room
            FROM subscriptions s LEFT JOIN busy b ON b.subscription_id = s.id
            WHERE s.enabled AND s.deleted_at IS NULL AND coalesce(b.n, 0) < $2
        ), due AS (
            SELECT d.*, o.room, o.ordered AND (
                       EXISTS (SELECT 1 FROM deliveries p
                               WHERE p.subscription_id = d.subscription_id AND p.user_id = d.user_id
                                 AND p.sequence < d.sequence AND p.status = 'pending')
                    OR EXISTS (SELECT 1 FROM events e
                               WHERE e.user_id = d.user_id AND e.sequence < d.sequence
                                 AND e.status = 'pending' AND e.type = ANY (o.event_types))) AS blocked
            FROM open o CROSS JOIN LATERAL (
                SELECT d.id, d.subscription_id, d.user_id, d.sequence, d.attempts, d.due_at FROM deliveries d
                WHERE d.subscription_id = o.id AND d.status = 'pending' AND d.parked_at IS NULL AND d.due_at <= now()
                ORDER BY d.due_at
                LIMIT o.room + 8
                FOR UPDATE SKIP LOCKED
            ) d
        ), parked AS (
            UPDATE deliveries d SET parked_at = now()
            FROM due WHERE d.id = due.id AND due.blocked
        ), chosen AS (
            SELECT id FROM (SELECT id, attempts, due_at, room,
                                   row_number() OVER (PARTITION BY subscription_id ORDER BY attempts > 0, due_at) AS rank
                            FROM due WHERE NOT blocked) ranked
            WHERE rank <= room
            ORDER BY attempts > 0, due_at LIMIT $3
        )
        UPDATE deliveries AS d
        SET lease_owner = $4,
            lease_expires_at = now() + make_interval(secs => $5),
            due_at = now() + make_interval(secs => $5),
            attempts = d.attempts + 1
        FROM chosen, events AS e, subscriptions AS s
        WHERE d.id = chosen.id AND e.id = d.event_id AND s.id = d.subscription_id
        RETURNING \(DeliveryTaskRow.columns)
        """

    static let bindingDataTypes: [PostgresDataType] = [.int8Array, .int8, .int8, .text, .float8]

    typealias Row = DeliveryTaskRow.Values

    var owner: String
    var limit: Int
    var lease: Duration
    var perSubscriptionCap: Int
    var answered: [Int64]

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(answered)
        bindings.append(perSubscriptionCap)
        bindings.append(limit)
        bindings.append(owner)
        bindings.append(lease.seconds)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// The deliveries handed off to this process, by id, while their lease is still its own.
/// The lease and the status are compared with `IS NOT DISTINCT FROM` (the same as `=` for
/// these values), which implies no partial index's predicate: the rows can be reached only by
/// key. With `=`, statistics taken while the queue was empty led the cached plan through
/// `deliveries_leased`, every delivery leased, handed-off ones waiting in memory included, to
/// find a few: after the benchmark's steps, 1,500 rows read and dropped a call under the
/// overload, and a call took twice as long (`CachedPlanTests`).
struct LeasedDeliveriesStatement: PostgresPreparedStatement {
    static let sql = """
        SELECT \(DeliveryTaskRow.columns)
        FROM deliveries d JOIN events e ON e.id = d.event_id JOIN subscriptions s ON s.id = d.subscription_id
        WHERE d.id = ANY ($1) AND d.lease_owner IS NOT DISTINCT FROM $2 AND d.status IS NOT DISTINCT FROM 'pending'
        ORDER BY d.id
        """

    static let bindingDataTypes: [PostgresDataType] = [.int8Array, .text]

    typealias Row = DeliveryTaskRow.Values

    var ids: [Int64]
    var owner: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(ids)
        bindings.append(owner)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// What a delivery task is made of, from a delivery `d`, its event `e` and its subscription `s`.
enum DeliveryTaskRow {
    static let columns = """
        d.id, d.event_id, d.subscription_id, d.webhook_id, d.attempts, s.url, s.secret,
        CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END,
        e.type, e.user_id, e.sequence, e.occurred_at, coalesce(e.verified_at, e.decided_at, now()),
        e.provider_phone_number,
        (SELECT p.provider_phone_number FROM events p
         WHERE p.user_id = e.user_id AND p.sequence < e.sequence AND p.status = 'verified'
         ORDER BY p.sequence DESC LIMIT 1),
        d.replay_id, (SELECT r.created_at FROM replays r WHERE r.id = d.replay_id), e.reason
        """

    typealias Values = (Int64, String, String, String, Int, String, String, String?, String, String, Int64, Date, Date,
                        String?, String?, String?, Date?, String?)
}

/// The verification claim (see `PostgresEventStore.claimVerifications`): due items, skipping
/// those another worker is locking, leased by moving their due time to the lease's end, with
/// their events.
struct ClaimVerificationsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH claimed AS (
            SELECT id FROM work_items
            WHERE kind = 'verify' AND due_at <= now()
            ORDER BY due_at
            LIMIT $1
            FOR UPDATE SKIP LOCKED
        ), leased AS (
            -- By key (`= ANY`): joined to the claimed ids, with statistics that knew of a
            -- backlog, the planner hashed every work item (and every event) to find a few.
            UPDATE work_items AS w
            SET lease_owner = $2,
                lease_expires_at = now() + make_interval(secs => $3),
                due_at = now() + make_interval(secs => $3),
                attempts = w.attempts + 1
            WHERE w.id = ANY (ARRAY(SELECT id FROM claimed))
            RETURNING w.id, w.attempts, w.event_id
        )
        SELECT l.id, l.attempts, e.id, e.type, e.user_id, e.sequence, e.occurred_at,
               e.pushed_phone_number, e.echo_service_provider, e.echo_authorization, e.source,
               e.oauth2_access_token, e.path
        -- An event per item, by its key (the LIMIT keeps the planner from making it a join).
        FROM leased l CROSS JOIN LATERAL (SELECT * FROM events e WHERE e.id = l.event_id LIMIT 1) e
        """

    static let bindingDataTypes: [PostgresDataType] = [.int8, .text, .float8]

    typealias Row = (Int64, Int, String, String, String, Int64, Date, String?, String?, String?, String, String?, String)

    var owner: String
    var limit: Int
    var lease: Duration

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(limit)
        bindings.append(owner)
        bindings.append(lease.seconds)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
