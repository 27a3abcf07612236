-- 017: a queue's parked head is found through an index of its queue (deliveries_parked:
-- user, subscription, sequence). deliveries_parked_at had the same predicate, so with the
-- statistics refreshed at the start of a burst the planner took it for that lookup in the
-- outcome and attempt statements' cached plans: it read every parked delivery and sorted
-- them, once per user and subscription. Under the overload benchmark, after a run's history, that was half of the
-- outcome statement's time (424 parked rows read and dropped per lookup, 6 ms a call against
-- 2.5). The sweeper, its only reader, names this predicate; the lookups do not imply it.
DROP INDEX deliveries_parked_at;
CREATE INDEX deliveries_parked_at ON deliveries (parked_at)
    WHERE status = 'pending' AND parked_at > '-infinity';
