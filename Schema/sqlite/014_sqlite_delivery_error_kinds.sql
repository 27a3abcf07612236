-- 014: distinct kinds of delivery failure, as PostgreSQL's 021_delivery_error_kinds.sql.
-- SQLite cannot change a CHECK constraint, so both tables are made again and their rows
-- copied (nothing refers to either).
CREATE TABLE delivery_attempts_014 (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id   INTEGER NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    started_at    INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    status_code   INTEGER,                          -- NULL when no answer came
    error_kind    TEXT CHECK (error_kind IN ('connection_refused', 'connect_timeout', 'timeout', 'reset', 'connect', 'dns',
                                             'tls', 'status', 'refused_address', 'other')),
    error         TEXT,
    response_head TEXT                              -- the first 1 KiB of the answer
) STRICT;
INSERT INTO delivery_attempts_014 (id, delivery_id, started_at, duration_ms, status_code, error_kind, error, response_head)
    SELECT id, delivery_id, started_at, duration_ms, status_code, error_kind, error, response_head FROM delivery_attempts;
DROP TABLE delivery_attempts;
ALTER TABLE delivery_attempts_014 RENAME TO delivery_attempts;
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id);

CREATE TABLE test_deliveries_014 (
    id              INTEGER PRIMARY KEY,
    subscription_id TEXT NOT NULL REFERENCES subscriptions (id),
    webhook_id      TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    duration_ms     INTEGER NOT NULL,
    status_code     INTEGER,
    error_kind      TEXT CHECK (error_kind IN ('connection_refused', 'connect_timeout', 'timeout', 'reset', 'connect', 'dns',
                                               'tls', 'status', 'refused_address', 'other')),
    error           TEXT,
    response_head   TEXT
);
INSERT INTO test_deliveries_014 (id, subscription_id, webhook_id, started_at, duration_ms, status_code, error_kind, error, response_head)
    SELECT id, subscription_id, webhook_id, started_at, duration_ms, status_code, error_kind, error, response_head FROM test_deliveries;
DROP TABLE test_deliveries;
ALTER TABLE test_deliveries_014 RENAME TO test_deliveries;
CREATE INDEX test_deliveries_subscription ON test_deliveries (subscription_id, id);
