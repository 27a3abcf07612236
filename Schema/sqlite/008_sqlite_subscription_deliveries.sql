-- 008: a subscription's own deliveries, newest first, as PostgreSQL's
-- 012_subscription_deliveries.sql.
CREATE INDEX deliveries_subscription ON deliveries (subscription_id, id);

-- Test deliveries (POST /v1/subscriptions/{id}/test), as PostgreSQL's.
CREATE TABLE test_deliveries (
    id              INTEGER PRIMARY KEY,
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id),
    webhook_id      TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    duration_ms     INTEGER NOT NULL,
    status_code     INTEGER,
    error_kind      TEXT CHECK (error_kind IN ('timeout', 'connect', 'dns', 'tls', 'status', 'refused_address', 'other')),
    error           TEXT,
    response_head   TEXT
);
CREATE INDEX test_deliveries_subscription ON test_deliveries (subscription_id, id);
