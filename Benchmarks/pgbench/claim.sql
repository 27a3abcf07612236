-- A batched claim-and-complete: up to 50 due work items taken past the locked ones and
-- deleted, in one statement and one commit.
WITH batch AS (
    SELECT id FROM work_items WHERE kind = 'verify' AND due_at <= now()
    ORDER BY due_at LIMIT 50 FOR UPDATE SKIP LOCKED
)
DELETE FROM work_items w USING batch WHERE w.id = batch.id;
