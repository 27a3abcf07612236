-- Support console sign-ins (/console). The browser holds a random session key; only its
-- SHA-256 is kept. A session of a stored access token ends with the token (the lookup joins
-- access_tokens and ignores revoked ones); token_id NULL is ECHORELAY_ADMIN_TOKEN.
CREATE TABLE console_sessions (
    key_sha256  bytea PRIMARY KEY,
    token_id    text REFERENCES access_tokens (id) ON DELETE CASCADE,
    name        text NOT NULL,
    role        text NOT NULL CHECK (role IN ('admin', 'support')),
    form_token  text NOT NULL,                      -- CSRF token of the session's forms
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
