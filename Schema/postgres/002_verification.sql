-- 002: verification outcomes, users' verified state, and the tokens seen verified.

ALTER TABLE events
    ADD COLUMN decided_at            timestamptz,   -- when the outcome became final
    ADD COLUMN provider_user_id      text,          -- id_str as the provider answered
    ADD COLUMN provider_phone_number text;          -- phone_number as the provider answered

-- Each user's current verified state. It follows the verified event with the highest
-- sequence: an older event verified late never overwrites a newer state.
CREATE TABLE users (
    user_id       text PRIMARY KEY,
    state         text NOT NULL CHECK (state IN ('active', 'deactivated')),
    phone_number  text,
    last_sequence bigint NOT NULL,        -- sequence of the event the state comes from
    last_event_at timestamptz NOT NULL,   -- that event's occurred_at
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- SHA-256 of every OAuth token the provider confirmed for a user (never the token).
-- Only the death of a token listed here proves that this user's session ended.
CREATE TABLE verified_tokens (
    user_id           text NOT NULL,
    token_sha256      bytea NOT NULL,
    first_verified_at timestamptz NOT NULL DEFAULT now(),
    last_verified_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, token_sha256)
);
