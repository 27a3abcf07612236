-- The pipeline's database floor: the lightest durable SQL for an event's whole life in
-- EchoRelay's tables, to run with `pgbench -M prepared -D batch=N` (scripts/bench-e2e.bash),
-- N events at a time (16 users spread over the 2,000 for N = 16, in sorted order, so that
-- clients do not deadlock on their sequences). Three statements, each its own transaction,
-- as a relay that batches and hands work over in memory needs at the least:
--   1. ingest: the light ceiling's statement (Benchmarks/pgbench/ingest.sql);
--   2. the verification outcome: the event verified, its work item gone, the user's state and
--      the confirmed token upserted, one delivery for each of the two subscriptions, written
--      already leased (no claim);
--   3. both deliveries delivered, with an attempt each.
-- It leaves out what EchoRelay's order rule and recovery add (claims, parking and unparking,
-- the probes for earlier pending deliveries), so its CPU per event is below what a relay of
-- these rows spends: the e2e part adds it to the HTTP floor's to bound the end-to-end rate.
-- The subscriptions bench_a and bench_b must exist (scripts/bench-e2e.bash creates them).
\set base random(0, 1999)
\set id random(1, 4611686018427387903 - 64)
WITH batch AS (
    SELECT (1000000000 + (:base + i * (2000 / :batch)) % 2000)::text AS user_id, (:id::bigint + i)::text AS id,
           i % 4 = 0 AS phone
    FROM generate_series(0, :batch - 1) AS i
), next AS (
    INSERT INTO user_sequences AS s (user_id, last_sequence)
    SELECT user_id, 1 FROM batch ORDER BY user_id
    ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + 1
    RETURNING user_id, last_sequence
), stored AS (
    INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint,
                        pushed_phone_number, echo_service_provider, echo_authorization)
    SELECT b.id, b.user_id, next.last_sequence,
           CASE WHEN b.phone THEN 'phone.changed' ELSE 'token.rotated' END,
           '2026-11-24T12:00:00Z',
           '\x8f1c2a7e5b3d9f60a4e2c7b1d8f3a6e09c5b2d7f1e4a8c3b6d9e2f5a1c7b4e8d',
           CASE WHEN b.phone THEN '+15555550123' END,
           'https://api.example.com/1.1/account/verify_credentials.json',
           'OAuth oauth_consumer_key="echorelay-bench", oauth_nonce="73e31341ab7575f17554045397255c89", oauth_signature="fvxr3loNZVGfGCvjmzOSDyykkks%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1795527126", oauth_token="1000001562-68b6156cde904792ecb40424fa74cc63cb25cd27", oauth_version="1.0"'
    FROM batch b JOIN next USING (user_id)
    RETURNING id, user_id
)
INSERT INTO work_items (kind, event_id, user_id) SELECT 'verify', id, user_id FROM stored;
WITH batch AS (
    SELECT (:id::bigint + i)::text AS id FROM generate_series(0, :batch - 1) AS i
), verified AS (
    UPDATE events SET status = 'verified', verified_at = now(), decided_at = now(), provider_user_id = user_id
    WHERE id IN (SELECT id FROM batch)
    RETURNING id, user_id, sequence
), done AS (
    DELETE FROM work_items WHERE event_id IN (SELECT id FROM batch)
), tokens AS (
    INSERT INTO verified_tokens (user_id, token_sha256)
    SELECT user_id, sha256(convert_to(id, 'UTF8')) FROM verified ORDER BY 1, 2
    ON CONFLICT (user_id, token_sha256) DO UPDATE SET last_verified_at = now()
), moved AS (
    INSERT INTO users (user_id, state, last_sequence, last_event_at)
    SELECT user_id, 'active', sequence, now() FROM verified ORDER BY user_id
    ON CONFLICT (user_id) DO UPDATE
    SET state = EXCLUDED.state, last_sequence = EXCLUDED.last_sequence,
        last_event_at = EXCLUDED.last_event_at, updated_at = now()
    WHERE users.last_sequence < EXCLUDED.last_sequence
)
INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, attempts,
                        lease_owner, lease_expires_at, due_at)
SELECT v.id, s.id, v.user_id, v.sequence, 'msg_' || v.id, 1,
       'bench', now() + interval '60 seconds', now() + interval '60 seconds'
FROM verified v CROSS JOIN (VALUES ('bench_a'), ('bench_b')) AS s (id);
WITH batch AS (
    SELECT (:id::bigint + i)::text AS id FROM generate_series(0, :batch - 1) AS i
), finished AS (
    UPDATE deliveries SET status = 'delivered', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
    WHERE event_id IN (SELECT id FROM batch) AND status = 'pending'
    RETURNING id, user_id
)
INSERT INTO delivery_attempts (delivery_id, user_id, started_at, duration_ms, status_code)
SELECT id, user_id, now(), 1, 204 FROM finished;
