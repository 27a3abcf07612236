-- 001 (SQLite): the whole schema of postgres/001–004 for the embedded store, in one file.
--
-- Differences from PostgreSQL, all forced by SQLite:
-- * Times are INTEGER microseconds since the Unix epoch, so comparisons and ordering are
--   exact. "now" comes from the application, one value per transaction, like now().
-- * Arrays and jsonb are JSON text, read with json_each / json_extract.
-- * Booleans are INTEGER 0/1.
-- * Identity columns are INTEGER PRIMARY KEY AUTOINCREMENT, so an id is never reused, like
--   an identity: the audit and dead-letter cursors rely on ids only growing.
-- * STRICT tables refuse a value of the wrong type, as PostgreSQL does.

-- The next sequence number per user. Ingest increments it in the transaction that stores
-- the event, so a user's sequences are gapless.
CREATE TABLE user_sequences (
    user_id       TEXT PRIMARY KEY,
    last_sequence INTEGER NOT NULL
) STRICT;

CREATE TABLE events (
    id                    TEXT PRIMARY KEY,             -- the provider's event id
    user_id               TEXT NOT NULL,
    sequence              INTEGER NOT NULL,             -- per user, from 1, no gaps
    type                  TEXT NOT NULL
        CHECK (type IN ('token.rotated', 'phone.changed', 'account.deactivated')),
    occurred_at           INTEGER NOT NULL,             -- as the provider says
    received_at           INTEGER NOT NULL,
    fingerprint           BLOB NOT NULL,                -- SHA-256 of the canonical body, for idempotency
    pushed_phone_number   TEXT,                         -- data.phone_number as pushed, not yet trusted
    -- OAuth Echo credentials: erased once the verification outcome is final.
    echo_service_provider TEXT,
    echo_authorization    TEXT,
    status                TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'verified', 'rejected', 'unverifiable')),
    status_reason         TEXT,
    verified_at           INTEGER,
    decided_at            INTEGER,                      -- when the outcome became final
    provider_user_id      TEXT,                         -- id_str as the provider answered
    provider_phone_number TEXT,                         -- phone_number as the provider answered
    CONSTRAINT events_user_sequence_key UNIQUE (user_id, sequence)
) STRICT;

-- Work lives in the database: a due item is claimed under a lease, and an item whose lease
-- ran out (its worker died) is due again.
CREATE TABLE work_items (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT NOT NULL CHECK (kind IN ('verify')),
    event_id         TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    due_at           INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL
) STRICT;
-- Claiming moves due_at to the end of the lease, so a leased item is simply not due yet.
CREATE INDEX work_items_claim ON work_items (kind, due_at);
CREATE INDEX work_items_event ON work_items (event_id);

-- Each user's current verified state. It follows the verified event with the highest
-- sequence: an older event verified late never overwrites a newer state.
CREATE TABLE users (
    user_id       TEXT PRIMARY KEY,
    state         TEXT NOT NULL CHECK (state IN ('active', 'deactivated')),
    phone_number  TEXT,
    last_sequence INTEGER NOT NULL,       -- sequence of the event the state comes from
    last_event_at INTEGER NOT NULL,       -- that event's occurred_at
    updated_at    INTEGER NOT NULL
) STRICT;

-- SHA-256 of every OAuth token the provider confirmed for a user (never the token).
-- Only the death of a token listed here proves that this user's session ended.
CREATE TABLE verified_tokens (
    user_id           TEXT NOT NULL,
    token_sha256      BLOB NOT NULL,
    first_verified_at INTEGER NOT NULL,
    last_verified_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, token_sha256)
) STRICT;

-- Bearer tokens with a role. Only a SHA-256 of each token is stored.
CREATE TABLE access_tokens (
    id           TEXT PRIMARY KEY,                  -- tok_…, shown in listings
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'support', 'app')),
    token_sha256 BLOB NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
) STRICT;

CREATE TABLE subscriptions (
    id                         TEXT PRIMARY KEY,    -- sub_…
    seq                        INTEGER NOT NULL UNIQUE,  -- list order and cursor: max + 1 on insert (one writer)
    owner_token_id             TEXT REFERENCES access_tokens (id),  -- the app token that created it; NULL for admins
    url                        TEXT NOT NULL,
    event_types                TEXT NOT NULL CHECK (json_valid(event_types) AND json_type(event_types) = 'array'),  -- JSON array of type names
    description                TEXT,
    ordered                    INTEGER NOT NULL DEFAULT 1 CHECK (ordered IN (0, 1)),
    enabled                    INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    disabled_reason            TEXT,
    secret                     TEXT NOT NULL,       -- whsec_…
    previous_secret            TEXT,                -- still signs until previous_secret_expires_at
    previous_secret_expires_at INTEGER,
    failing_since              INTEGER,             -- first failed attempt since the last success
    last_success_at            INTEGER,
    created_at                 INTEGER NOT NULL,
    updated_at                 INTEGER NOT NULL,
    deleted_at                 INTEGER
) STRICT;

CREATE TABLE replays (
    id               TEXT PRIMARY KEY,               -- rpl_…
    kind             TEXT NOT NULL CHECK (kind IN ('event', 'bulk')),
    -- 'running' until cancelled; it reads as completed once every delivery is created
    -- (cursor_done) and final.
    state            TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'cancelled')),
    created_at       INTEGER NOT NULL,
    cancelled_at     INTEGER,
    actor_name       TEXT NOT NULL,
    actor_role       TEXT NOT NULL,
    reason           TEXT NOT NULL,
    event_id         TEXT REFERENCES events (id) ON DELETE CASCADE,  -- set for the replay of one event
    filter           TEXT CHECK (filter IS NULL OR json_valid(filter)),  -- the filter of a bulk replay, as asked (JSON)
    matched          INTEGER NOT NULL,
    -- A bulk replay creates its deliveries in batches, in (user_id, sequence, subscription_id)
    -- order, so a user's replayed events are queued in order. The cursor is the last pair
    -- created; it commits with each batch, so a restart resumes where it stopped.
    max_delivery_id  INTEGER,                        -- only deliveries that existed when it was asked
    cursor_user_id   TEXT,
    cursor_sequence  INTEGER,
    cursor_subscription_id TEXT,
    cursor_done      INTEGER NOT NULL DEFAULT 0 CHECK (cursor_done IN (0, 1)),
    sent             INTEGER NOT NULL DEFAULT 0      -- deliveries created so far
) STRICT;
CREATE INDEX replays_creating ON replays (created_at) WHERE state = 'running' AND cursor_done = 0;

-- One original delivery per (event, subscription), created with the verification outcome,
-- and at most one more per replay. It is its own queue, claimed under a lease like work_items.
CREATE TABLE deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id         TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    subscription_id  TEXT NOT NULL REFERENCES subscriptions (id),
    user_id          TEXT NOT NULL,                 -- copied from the event: the order key
    sequence         INTEGER NOT NULL,
    webhook_id       TEXT NOT NULL,                 -- the same on every try and replay
    status           TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'dead', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    due_at           INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    -- A replayed delivery is a new row with the same webhook-id, marked with its replay.
    replay_id        TEXT REFERENCES replays (id) ON DELETE CASCADE
) STRICT;
CREATE UNIQUE INDEX deliveries_original_key ON deliveries (event_id, subscription_id) WHERE replay_id IS NULL;
CREATE UNIQUE INDEX deliveries_replay_key ON deliveries (event_id, subscription_id, replay_id) WHERE replay_id IS NOT NULL;
CREATE INDEX deliveries_claim ON deliveries (due_at) WHERE status = 'pending';
-- The order rule looks for earlier pending deliveries of the same user and subscription.
CREATE INDEX deliveries_order ON deliveries (subscription_id, user_id, sequence) WHERE status = 'pending';
-- The bulk replay cursor walks original deliveries by user and sequence.
CREATE INDEX deliveries_user_order ON deliveries (user_id, sequence, subscription_id) WHERE replay_id IS NULL;
CREATE INDEX deliveries_replay ON deliveries (replay_id) WHERE replay_id IS NOT NULL;
CREATE INDEX deliveries_dead ON deliveries (id) WHERE status = 'dead';
CREATE INDEX deliveries_event ON deliveries (event_id);
-- The order rule's other half: earlier events of the user still awaiting verification.
CREATE INDEX events_pending ON events (user_id, sequence) WHERE status = 'pending';

CREATE TABLE delivery_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id   INTEGER NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    started_at    INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    status_code   INTEGER,                          -- NULL when no answer came
    error_kind    TEXT CHECK (error_kind IN ('timeout', 'connect', 'dns', 'tls', 'status', 'refused_address', 'other')),
    error         TEXT,
    response_head TEXT                              -- the first 1 KiB of the answer
) STRICT;
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id);

-- Every support and admin action: who (the token's name and role), what, which filter, how
-- many it matched, and why. Never secrets.
CREATE TABLE audit_log (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at             INTEGER NOT NULL,
    actor_token_id TEXT,                             -- NULL for ECHORELAY_ADMIN_TOKEN and the command line
    actor_name     TEXT NOT NULL,
    actor_role     TEXT NOT NULL,
    action         TEXT NOT NULL,                    -- e.g. event.replay, subscription.delete
    target         TEXT,                             -- the id acted on
    filter         TEXT CHECK (filter IS NULL OR json_valid(filter)),  -- the filter of a bulk action (JSON)
    matched        INTEGER,
    reason         TEXT
) STRICT;
CREATE INDEX audit_log_at ON audit_log (at);

-- Values the process keeps across restarts (for example secrets it generated on first start).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
