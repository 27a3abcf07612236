-- The own ceiling: EchoRelay's own ingest statement, to run with `pgbench -M prepared`
-- (scripts/bench).
--
-- COPIED FROM PostgresEventStore.ingestOne (Sources/EchoRelayPostgres/PostgresEventStore.swift),
-- the statement one event goes through when it commits alone. When that statement changes,
-- copy it here again: each \(…) of the Swift source becomes a pgbench variable with the cast
-- of the type PostgresNIO binds it as (String → ::text, Date → ::timestamptz, Data → ::bytea),
-- except the event's type and phone number, which pgbench cannot draw as strings: a CASE on
-- :phone picks them (a quarter phone.changed with a number, the rest token.rotated and NULL).
-- scripts/bench passes the values that do not change per event with -D, at the sizes EchoRelay
-- binds them: a 32-byte fingerprint, the service provider's URL, a ~300-byte OAuth header.
\set user random(1000000000, 1000001999)
\set id random(1, 4611686018427387903)
\set phone random(0, 3) = 0
WITH next AS (
    INSERT INTO user_sequences AS s (user_id, last_sequence) VALUES (:user::text, 1)
    ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + 1
    RETURNING last_sequence
), stored AS (
    INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint,
                        pushed_phone_number, echo_service_provider, echo_authorization)
    SELECT :id::text, :user::text, next.last_sequence, CASE WHEN :phone THEN 'phone.changed' ELSE 'token.rotated' END,
           :occurred_at::timestamptz, :fingerprint::bytea, CASE WHEN :phone THEN :phone_number::text END,
           :service_provider::text, :authorization::text
    FROM next
    RETURNING id, sequence
), work AS (
    INSERT INTO work_items (kind, event_id) SELECT 'verify', id FROM stored
)
SELECT sequence FROM stored
