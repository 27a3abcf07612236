-- The own ceiling: EchoRelay's own ingest statement, to run with `pgbench -M prepared`
-- (scripts/bench), one event per transaction as a lone event goes.
--
-- COPIED FROM IngestStatement.sql (Sources/EchoRelayPostgres/IngestStatement.swift), the one
-- statement every ingest batch goes through, here with a batch of one. When that statement
-- changes, copy it here again (IngestStatementTests checks that this file is that statement):
-- each array parameter $1…$8 becomes a one-element ARRAY[…] of a pgbench variable with the
-- cast PostgresNIO binds it as, and $9 (the NOTIFY payload, unset on a process with workers)
-- NULL. pgbench cannot draw strings, so a CASE on :phone picks the type and phone number (a
-- quarter phone.changed with a number, the rest token.rotated and no number). scripts/bench
-- passes the values that do not change per event with -D, at the sizes EchoRelay binds them.
\set user random(1000000000, 1000001999)
\set id random(1, 4611686018427387903)
\set phone random(0, 3) = 0
WITH input AS (
    SELECT * FROM unnest(ARRAY[:id::text], ARRAY[:user::text], ARRAY[CASE WHEN :phone THEN 'phone.changed' ELSE 'token.rotated' END], ARRAY[:occurred_at::timestamptz],
                         ARRAY[:fingerprint::bytea], ARRAY[CASE WHEN :phone THEN :phone_number::text ELSE '' END], ARRAY[:service_provider::text], ARRAY[:authorization::text])
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
    SELECT 'verify', id, user_id, NULL::text, now() + make_interval(secs => NULL::float8),
           now() + make_interval(secs => coalesce(NULL::float8, 0)), CASE WHEN NULL::text IS NULL THEN 0 ELSE 1 END
    FROM stored
    RETURNING id, event_id
), woken AS (
    SELECT pg_notify('echorelay_work', NULL::text)
    FROM (SELECT FROM stored LIMIT 1) anything_stored WHERE NULL::text IS NOT NULL
)
SELECT s.id, s.sequence, w.id FROM stored s JOIN work w ON w.event_id = s.id CROSS JOIN (SELECT count(*) FROM woken) sent
