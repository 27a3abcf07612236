-- 023: each console session records the SHA-256 of the credential it was opened with, so a
-- session of ECHORELAY_ADMIN_TOKEN ends when the variable is changed, not only when it is
-- unset. Sessions opened before have none, and an admin-token one of them ends at once.
ALTER TABLE console_sessions ADD COLUMN credential_sha256 bytea;
