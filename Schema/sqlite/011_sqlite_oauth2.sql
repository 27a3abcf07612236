-- 011: re-verification with OAuth 2, as PostgreSQL's 018_oauth2.sql.
ALTER TABLE events ADD COLUMN path TEXT NOT NULL DEFAULT 'echo' CHECK (path IN ('echo', 'oauth2', 'set'));
ALTER TABLE events ADD COLUMN oauth2_access_token TEXT;
UPDATE events SET path = 'set' WHERE source = 'set';

ALTER TABLE verified_tokens ADD COLUMN expires_at INTEGER;
ALTER TABLE verified_tokens ADD COLUMN last_sequence INTEGER;
ALTER TABLE verified_tokens ADD COLUMN rotated_sequence INTEGER;
