-- One EchoRelay ingest, as PostgresEventStore.ingest runs it: the user's next sequence
-- number, the event row and its verification work item, in one statement and one commit.
-- 10,000 users, so concurrent clients rarely wait on the same user's row.
\set user random(1, 10000)
WITH next AS (
    INSERT INTO user_sequences AS s (user_id, last_sequence) VALUES ('u' || :user, 1)
    ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + 1
    RETURNING last_sequence
), stored AS (
    INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, echo_service_provider, echo_authorization)
    SELECT 'evt_' || gen_random_uuid(), 'u' || :user, next.last_sequence, 'token.rotated', now(),
           '\x00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff'::bytea,
           'https://api.example.com/1.1/account/verify_credentials.json',
           'OAuth oauth_consumer_key="k", oauth_token="t", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1", oauth_nonce="n", oauth_version="1.0", oauth_signature="s"'
    FROM next
    RETURNING id
)
INSERT INTO work_items (kind, event_id) SELECT 'verify', id FROM stored;
