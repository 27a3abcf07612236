-- The claim part's backlog (scripts/bench-claim.bash), written straight into a migrated
-- database: run with psql -v blocked_users=N -v per_user=K -v ready=R.
--
-- Two ordered subscriptions (token.rotated, phone.changed), and verified events whose
-- deliveries are pending for both:
--   blocked: N users whose first delivery failed once and waits an hour for its retry, and
--            whose K later ones wait behind it, parked: N × K × 2 rows that the claim must
--            never read
--   ready:   R users with one due delivery each, a queue head the claim may take: R × 2 rows
-- Rows as EchoRelay writes them (PostgresEventStore+Verification.swift): the webhook-id
-- from the event and subscription, the user and sequence copied from the event.
INSERT INTO subscriptions (id, url, event_types, ordered, secret)
VALUES ('sub_claim_a', 'http://127.0.0.1:9/hooks/a', '{token.rotated,phone.changed}', true, 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3'),
       ('sub_claim_b', 'http://127.0.0.1:9/hooks/b', '{token.rotated,phone.changed}', true, 'whsec_ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4');

CREATE TEMPORARY TABLE backlog AS
SELECT 'blocked_' || u AS user_id, s AS sequence, s = 1 AS head
FROM generate_series(1, :blocked_users) u, generate_series(1, :per_user + 1) s
UNION ALL
SELECT 'ready_' || u, 1, false FROM generate_series(1, :ready) u;

INSERT INTO user_sequences (user_id, last_sequence)
SELECT user_id, max(sequence) FROM backlog GROUP BY user_id;

INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, status, verified_at)
SELECT 'evt_' || user_id || '_' || sequence, user_id, sequence, 'token.rotated', now(),
       sha256((user_id || '_' || sequence)::bytea), 'verified', now()
FROM backlog;

INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, attempts, due_at, parked_at)
SELECT e, s, b.user_id, b.sequence, 'msg_' || substr(md5(e || '/' || s), 1, 26),
       CASE WHEN b.head THEN 1 ELSE 0 END,
       CASE WHEN b.head THEN now() + interval '1 hour' ELSE now() - interval '1 second' END,
       -- Behind a pending head: parked, as the fan-out writes them (006_delivery_heads.sql).
       CASE WHEN b.user_id LIKE 'blocked_%' AND NOT b.head THEN now() END
FROM backlog b, LATERAL (SELECT 'evt_' || b.user_id || '_' || b.sequence) AS id(e),
     unnest(ARRAY['sub_claim_a', 'sub_claim_b']) AS s;
