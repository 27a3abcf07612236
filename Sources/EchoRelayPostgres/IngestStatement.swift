import EchoRelayCore
import PostgresNIO

/// Stores a batch of new events — one or many — with their verification work items, as one
/// prepared statement: the events travel as typed arrays through `unnest`, so one statement
/// text serves every batch size, and the server parses and plans it once per connection.
///
/// Each user's sequence moves once by its count of events, which are numbered in arrival
/// order; users are locked in user-id order, so two batches never wait on each other in a
/// cycle. The statement reads no table but through the unique indexes it writes, so its cached
/// plan cannot grow dearer with the tables. It expects every id to be new: an id stored before
/// (a retry) fails it as a whole with a unique violation on `events_pkey`, writing nothing, and
/// the caller answers retries from their rows and stores the rest again. Returns the id,
/// sequence and work item of each event.
///
/// With a `handOff` (an owner and a lease), the work items are written leased to that owner
/// (this process's verify worker, which gets the events in memory: no claim).
///
/// When `wakePayload` is set, the statement also sends one `NOTIFY` (with that payload, the
/// sender's process id) if it stored anything: inside the transaction that creates the work,
/// so it costs no commit of its own. `Benchmarks/pgbench/ingest-own.sql` runs this text.
struct IngestStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[],
                                 $5::bytea[], $6::text[], $7::text[], $8::text[])
                WITH ORDINALITY AS i(id, user_id, type, occurred_at, fingerprint, phone, provider, proof, position)
        ), counts AS (
            SELECT user_id, count(*) AS n FROM input GROUP BY user_id
        ), next AS (
            INSERT INTO user_sequences AS s (user_id, last_sequence)
            SELECT user_id, n FROM counts ORDER BY user_id
            ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence
            RETURNING user_id, last_sequence
        ), stored AS (
            INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint,
                                pushed_phone_number, echo_service_provider, echo_authorization, oauth2_access_token, path)
            SELECT f.id, f.user_id,
                   next.last_sequence - counts.n + row_number() OVER (PARTITION BY f.user_id ORDER BY f.position),
                   f.type, f.occurred_at, f.fingerprint, nullif(f.phone, ''), nullif(f.provider, ''),
                   CASE WHEN f.provider = '' THEN NULL ELSE f.proof END, CASE WHEN f.provider = '' THEN f.proof END,
                   CASE WHEN f.provider = '' THEN 'oauth2' ELSE 'echo' END
            FROM input f JOIN counts USING (user_id) JOIN next USING (user_id)
            RETURNING id, user_id, sequence
        ), work AS (
            INSERT INTO work_items (kind, event_id, user_id, lease_owner, lease_expires_at, due_at, attempts)
            SELECT 'verify', id, user_id, $10::text, now() + make_interval(secs => $11::float8),
                   now() + make_interval(secs => coalesce($11::float8, 0)), CASE WHEN $10::text IS NULL THEN 0 ELSE 1 END
            FROM stored
            RETURNING id, event_id
        ), woken AS (
            SELECT pg_notify('\(PostgresWorkNotifications.channel)', $9)
            FROM (SELECT FROM stored LIMIT 1) anything_stored WHERE $9 IS NOT NULL
        )
        SELECT s.id, s.sequence, w.id FROM stored s JOIN work w ON w.event_id = s.id CROSS JOIN (SELECT count(*) FROM woken) sent
        """

    static let bindingDataTypes: [PostgresDataType] = [
        .textArray, .textArray, .textArray, .timestamptzArray, .byteaArray, .textArray, .textArray, .textArray, .text,
        .text, .float8,
    ]

    typealias Row = (String, Int64, Int64)

    var events: [IncomingEvent]
    var wakePayload: String?
    var handOff: HandOff?

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 11)
        bindings.append(events.map(\.id))
        bindings.append(events.map(\.userID))
        bindings.append(events.map(\.type.rawValue))
        bindings.append(events.map(\.occurredAt))
        bindings.append(events.map { ByteBuffer(bytes: $0.fingerprint) })
        bindings.append(events.map { $0.phoneNumber ?? "" })
        // The proof: echo's service provider and header, or '' and the OAuth 2 access token (the
        // arrays hold no NULLs; a service provider is never empty).
        bindings.append(events.map { $0.echo?.serviceProvider ?? "" })
        bindings.append(events.map { $0.echo?.authorization.revealed ?? $0.oauth2?.accessToken.revealed ?? "" })
        bindings.append(wakePayload)
        bindings.append(handOff?.owner)
        bindings.append(handOff.map(\.lease.seconds))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
