-- 008: no JIT compilation for EchoRelay's database. PostgreSQL compiles a statement with LLVM
-- when its estimated cost passes jit_above_cost; the queue's statements pass it when many
-- deliveries are due at once (a subscriber back from an outage), and then spend ~30 ms
-- compiling a claim that runs in under 1 ms (measured: 80,000 due deliveries per
-- subscription, 29-33 ms with JIT, 0.8-1.5 ms without). Short OLTP statements never gain from
-- it. This sets the default for the database's new sessions and turns it off in this one
-- (serve keeps the migrating connection in its pool). Only the database's owner may change
-- its defaults: any other migrating user gets a notice, and EchoRelay works with JIT on,
-- slower when a large backlog is due.
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET jit = off', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'jit stays on for this database: only its owner can set ALTER DATABASE % SET jit = off', current_database();
END $$;
SET jit = off;
