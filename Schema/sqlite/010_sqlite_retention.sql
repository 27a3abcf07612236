-- 010: retention, as PostgreSQL's 014_retention.sql: a pruned event keeps its row as its
-- receipt, and pruned_at says when its deliveries, attempts and pushed payload went.
ALTER TABLE events ADD COLUMN pruned_at INTEGER;
