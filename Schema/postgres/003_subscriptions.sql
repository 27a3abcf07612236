-- 003: access tokens, subscriptions, deliveries and their attempts.

-- Bearer tokens with a role. Only a SHA-256 of each token is stored.
CREATE TABLE access_tokens (
    id           text PRIMARY KEY,                  -- tok_…, shown in listings
    name         text NOT NULL,
    role         text NOT NULL CHECK (role IN ('admin', 'support', 'app')),
    token_sha256 bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);

CREATE TABLE subscriptions (
    id                         text PRIMARY KEY,    -- sub_…
    seq                        bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- list order and cursor
    owner_token_id             text REFERENCES access_tokens (id),  -- the app token that created it; NULL for admins
    url                        text NOT NULL,
    event_types                text[] NOT NULL,
    description                text,
    ordered                    boolean NOT NULL DEFAULT true,
    enabled                    boolean NOT NULL DEFAULT true,
    disabled_reason            text,
    secret                     text NOT NULL,       -- whsec_…
    previous_secret            text,                -- still signs until previous_secret_expires_at
    previous_secret_expires_at timestamptz,
    failing_since              timestamptz,         -- first failed attempt since the last success
    last_success_at            timestamptz,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    deleted_at                 timestamptz
);

-- One delivery per (event, subscription), created with the verification outcome. It is its
-- own queue: claimed with FOR UPDATE SKIP LOCKED under a lease, like work_items.
CREATE TABLE deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    subscription_id  text NOT NULL REFERENCES subscriptions (id),
    user_id          text NOT NULL,                 -- copied from the event: the order key
    sequence         bigint NOT NULL,
    webhook_id       text NOT NULL,                 -- the same on every try and replay
    status           text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'dead', 'cancelled')),
    attempts         integer NOT NULL DEFAULT 0,
    due_at           timestamptz NOT NULL DEFAULT now(),
    lease_owner      text,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT deliveries_event_subscription_key UNIQUE (event_id, subscription_id)
);
CREATE INDEX deliveries_claim ON deliveries (due_at) WHERE status = 'pending';
-- The order rule looks for earlier pending deliveries of the same user and subscription.
CREATE INDEX deliveries_order ON deliveries (subscription_id, user_id, sequence) WHERE status = 'pending';

CREATE TABLE delivery_attempts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id   bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    started_at    timestamptz NOT NULL,
    duration_ms   integer NOT NULL,
    status_code   integer,                          -- NULL when no answer came
    error_kind    text CHECK (error_kind IN ('timeout', 'connect', 'dns', 'tls', 'status', 'refused_address', 'other')),
    error         text,
    response_head text                              -- the first 1 KiB of the answer
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id);
