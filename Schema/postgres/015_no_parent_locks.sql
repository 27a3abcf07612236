-- 015: no row lock on an event or a subscription for every row that refers to it.
-- A foreign key's check locks the parent row FOR KEY SHARE for each new child row. Ingest's
-- work items locked their event, and every new delivery locked its event and its
-- subscription; the last is a row that every concurrent outcome statement shares, so its
-- lock became a multixact on each. auto_explain put these checks at about a fifth of the
-- outcome statement's time (BENCHMARKS.md, after run R).
-- The keys protected nothing the store does: events are never deleted (retention marks a
-- pruned event and keeps its row as the receipt, 014) and subscriptions are never deleted
-- (deleted_at), and every child row is made from its parent's row in the same statement.
-- What the keys did guarantee, that a parent never goes while children point at it, is
-- kept by refusing the delete itself: a statement trigger, which costs nothing until
-- someone deletes.
ALTER TABLE work_items DROP CONSTRAINT work_items_event_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_subscription_id_fkey;

CREATE FUNCTION echorelay_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% rows are never deleted: other rows refer to them (%)', TG_TABLE_NAME, TG_ARGV[0]
        USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER events_never_deleted BEFORE DELETE OR TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION echorelay_refuse_delete('retention marks an event pruned and keeps its row');
CREATE TRIGGER subscriptions_never_deleted BEFORE DELETE OR TRUNCATE ON subscriptions
    FOR EACH STATEMENT EXECUTE FUNCTION echorelay_refuse_delete('a deleted subscription keeps its row with deleted_at set');
