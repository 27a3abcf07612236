-- 014: retention (ECHORELAY_RETAIN_EVENTS). A pruned event keeps its row as its receipt —
-- id, fingerprint, user, sequence, type, outcome and times — so the same event id pushed
-- again still gets its stored receipt and the user's sequence stays right; its deliveries,
-- their attempts and its pushed payload are gone, and pruned_at says when.
ALTER TABLE events ADD COLUMN pruned_at timestamptz;
