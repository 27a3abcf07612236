-- 015: an app team signs in to the console too, as PostgreSQL's 022_console_app_sessions.sql.
-- SQLite cannot change a CHECK constraint: the table is made again (sessions are few and
-- short-lived; nothing refers to them).
CREATE TABLE console_sessions_015 (
    key_sha256  BLOB PRIMARY KEY,
    token_id    TEXT REFERENCES access_tokens (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'support', 'app')),
    form_token  TEXT NOT NULL,                      -- CSRF token of the session's forms
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
INSERT INTO console_sessions_015 SELECT key_sha256, token_id, name, role, form_token, created_at, expires_at FROM console_sessions;
DROP TABLE console_sessions;
ALTER TABLE console_sessions_015 RENAME TO console_sessions;
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
