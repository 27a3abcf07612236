-- 012: a subscription's own deliveries, newest first (GET /v1/subscriptions/{id}/deliveries):
-- without this index the list walks every subscription's deliveries by id to find one
-- subscription's.
CREATE INDEX deliveries_subscription ON deliveries (subscription_id, id);

-- Test deliveries (POST /v1/subscriptions/{id}/test): outside every user's sequence, so not
-- rows of deliveries (which belong to an event); each keeps its one attempt.
CREATE TABLE test_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id text NOT NULL REFERENCES subscriptions (id),
    webhook_id      text NOT NULL,
    started_at      timestamptz NOT NULL,
    duration_ms     integer NOT NULL,
    status_code     integer,
    error_kind      text CHECK (error_kind IN ('timeout', 'connect', 'dns', 'tls', 'status', 'refused_address', 'other')),
    error           text,
    response_head   text
);
CREATE INDEX test_deliveries_subscription ON test_deliveries (subscription_id, id);
