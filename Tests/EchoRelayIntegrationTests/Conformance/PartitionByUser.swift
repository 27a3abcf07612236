/// The migrated PostgreSQL schema remade with its per-user tables hash-partitioned by
/// `user_id`, as docs/scaling.md plans to spread them over shards: the conformance suite runs
/// every store statement on it (`StoreKind.postgresByUser`), which shows that the schema and
/// the statements hold when each user's rows live in one partition of several.
///
/// Each table keeps its columns, defaults, checks, outgoing foreign keys and triggers. Its
/// unique keys gain `user_id` where they lack it (a partitioned table's unique keys must hold
/// the partition key); identity columns become sequence defaults (PostgreSQL 15 has no
/// identity columns on partitioned tables). Foreign keys that point at a partitioned table's
/// `id` cannot stay, as `id` is no longer unique on its own: `delivery_attempts`,
/// `replays` and `security_events` lose theirs (docs/scaling.md, "What must change first").
/// `security_events` stays one table: its rows are placed by a user only once its subject
/// is known.
enum PartitionByUser {
    static let tables = ["user_sequences", "users", "verified_tokens", "events", "work_items", "deliveries", "delivery_attempts"]
    static let partitions = 4

    static let sql = """
        DO $convert$
        DECLARE
            t text;
            keys text[];
            indexes text[];
            triggers text[];
            foreign_keys text[];
            sequences text[];
            item text;
            n int;
        BEGIN
            FOREACH t IN ARRAY ARRAY['\(tables.joined(separator: "','"))'] LOOP
                -- What the new table must have again, read before the old one goes.
                SELECT coalesce(array_agg(format('ALTER TABLE %I ADD CONSTRAINT %I %s', t, conname,
                           CASE WHEN pg_get_constraintdef(oid) ~ '\\muser_id\\M' THEN pg_get_constraintdef(oid)
                                ELSE regexp_replace(pg_get_constraintdef(oid), '\\(([^)]*)\\)', '(\\1, user_id)') END)), '{}')
                  INTO keys FROM pg_constraint WHERE conrelid = t::regclass AND contype IN ('p', 'u');
                SELECT coalesce(array_agg(format('ALTER TABLE %I ADD CONSTRAINT %I %s', t, conname, pg_get_constraintdef(oid))), '{}')
                  INTO foreign_keys FROM pg_constraint WHERE conrelid = t::regclass AND contype = 'f';
                SELECT coalesce(array_agg(
                           CASE WHEN NOT ix.indisunique OR def ~ 'USING \\w+ \\([^)]*\\muser_id\\M' THEN def
                                ELSE regexp_replace(def, 'USING (\\w+) \\(([^)]*)\\)', 'USING \\1 (\\2, user_id)') END), '{}')
                  INTO indexes
                  FROM pg_index ix, pg_get_indexdef(ix.indexrelid) AS def
                 WHERE ix.indrelid = t::regclass
                   AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = ix.indexrelid AND c.contype IN ('p', 'u'));
                SELECT coalesce(array_agg(pg_get_triggerdef(oid)), '{}')
                  INTO triggers FROM pg_trigger WHERE tgrelid = t::regclass AND NOT tgisinternal;
                SELECT coalesce(array_agg(attname::text), '{}')
                  INTO sequences FROM pg_attribute WHERE attrelid = t::regclass AND attidentity <> '';

                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED)'
                               ' PARTITION BY HASH (user_id)', t || '_by_user', t);
                EXECUTE format('DROP TABLE %I CASCADE', t);
                EXECUTE format('ALTER TABLE %I RENAME TO %I', t || '_by_user', t);
                FOR n IN 0..\(partitions - 1) LOOP
                    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS \(partitions), REMAINDER %s)',
                                   t || '_p' || n, t, n);
                END LOOP;
                FOREACH item IN ARRAY sequences LOOP
                    EXECUTE format('CREATE SEQUENCE %I OWNED BY %I.%I', t || '_' || item || '_seq', t, item);
                    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET DEFAULT nextval(%L)', t, item, t || '_' || item || '_seq');
                END LOOP;
                FOREACH item IN ARRAY keys || indexes || foreign_keys || triggers LOOP
                    EXECUTE item;
                END LOOP;
            END LOOP;
        END
        $convert$
        """
}
