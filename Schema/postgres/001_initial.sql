-- 001: events, per-user sequence counters and the work-item outbox.

-- The next sequence number per user. Ingest increments it in the same statement that
-- stores the event, so the row lock makes a user's sequences gapless under concurrency.
CREATE TABLE user_sequences (
    user_id       text PRIMARY KEY,
    last_sequence bigint NOT NULL
);

CREATE TABLE events (
    id                    text PRIMARY KEY,             -- the provider's event id
    user_id               text NOT NULL,
    sequence              bigint NOT NULL,              -- per user, from 1, no gaps
    type                  text NOT NULL
        CHECK (type IN ('token.rotated', 'phone.changed', 'account.deactivated')),
    occurred_at           timestamptz NOT NULL,         -- as the provider says
    received_at           timestamptz NOT NULL DEFAULT now(),
    fingerprint           bytea NOT NULL,               -- SHA-256 of the canonical body, for idempotency
    pushed_phone_number   text,                         -- data.phone_number as pushed, not yet trusted
    -- OAuth Echo credentials: erased once the verification outcome is final.
    echo_service_provider text,
    echo_authorization    text,
    status                text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'verified', 'rejected', 'unverifiable')),
    status_reason         text,
    verified_at           timestamptz,
    CONSTRAINT events_user_sequence_key UNIQUE (user_id, sequence)
);

-- Work lives in the database: any process claims a due item under a lease, and a crashed
-- worker's items come back when the lease ends.
CREATE TABLE work_items (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text NOT NULL CHECK (kind IN ('verify')),
    event_id         text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    due_at           timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- The claim: WHERE kind = $1 AND due_at <= now() ORDER BY due_at LIMIT $n FOR UPDATE SKIP LOCKED.
-- Claiming moves due_at to the end of the lease, so a leased item is simply not due yet.
CREATE INDEX work_items_claim ON work_items (kind, due_at);
CREATE INDEX work_items_event ON work_items (event_id);
