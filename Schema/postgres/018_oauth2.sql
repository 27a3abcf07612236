-- 018: re-verification with OAuth 2 (token introspection, RFC 7662, and OpenID Connect UserInfo).

-- The path an event is confirmed by, for support: OAuth Echo, OAuth 2, or a Security Event
-- Token's signature. A constant default adds the column without a table rewrite; only the
-- events that came as SETs are written.
ALTER TABLE events
    ADD COLUMN path text NOT NULL DEFAULT 'echo' CHECK (path IN ('echo', 'oauth2', 'set')),
    -- The user's access token pushed with `oauth2`: erased once the outcome is final.
    ADD COLUMN oauth2_access_token text;
UPDATE events SET path = 'set' WHERE source = 'set';

-- What the OAuth 2 deactivation rule asks of a token EchoRelay verified: the `exp` the
-- provider gave (a token that merely ran out proves nothing), the newest sequence of the
-- user's events that confirmed it, and of those the newest rotation (a token confirmed by a
-- later rotation replaces every token confirmed before it).
ALTER TABLE verified_tokens
    ADD COLUMN expires_at       timestamptz,
    ADD COLUMN last_sequence    bigint,
    ADD COLUMN rotated_sequence bigint;
