-- The light ceiling: the lightest durable ingest transaction we can write for the rows
-- EchoRelay stores per event, to run with `pgbench -M prepared` (scripts/bench). One
-- statement and one commit: the user's next sequence number (upsert), the event row and
-- its verification work item. Nothing goes back to the client.
--
-- The rows are EchoRelay's: a fresh id, one of 2,000 users (as the wrk requests), a quarter
-- phone.changed with a phone number, a 32-byte fingerprint, the service provider's URL and a
-- ~300-byte OAuth header. What does not change per event is written as constants, which a
-- prepared statement parses once; the id, the user and the kind are bound each time.
-- Compare Benchmarks/pgbench/ingest-own.sql, EchoRelay's own statement.
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
    SELECT :id::text, :user::text, next.last_sequence,
           CASE WHEN :phone THEN 'phone.changed' ELSE 'token.rotated' END,
           '2026-11-24T12:00:00Z',
           '\x8f1c2a7e5b3d9f60a4e2c7b1d8f3a6e09c5b2d7f1e4a8c3b6d9e2f5a1c7b4e8d',
           CASE WHEN :phone THEN '+15555550123' END,
           'https://api.example.com/1.1/account/verify_credentials.json',
           'OAuth oauth_consumer_key="echorelay-bench", oauth_nonce="73e31341ab7575f17554045397255c89", oauth_signature="fvxr3loNZVGfGCvjmzOSDyykkks%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1795527126", oauth_token="1000001562-68b6156cde904792ecb40424fa74cc63cb25cd27", oauth_version="1.0"'
    FROM next
    RETURNING id, user_id
)
INSERT INTO work_items (kind, event_id, user_id) SELECT 'verify', id, user_id FROM stored;
