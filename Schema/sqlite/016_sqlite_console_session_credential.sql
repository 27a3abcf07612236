-- 016: the credential's SHA-256 on each console session, as PostgreSQL's
-- 023_console_session_credential.sql.
ALTER TABLE console_sessions ADD COLUMN credential_sha256 BLOB;
