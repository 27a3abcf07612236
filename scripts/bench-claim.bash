# The `claim` part of scripts/bench, which sources this file and calls claim_part: the cost of
# the worker's delivery claim as the backlog grows. It uses scripts/bench's helpers.
#
# For each size in CLAIM_BACKLOGS (1000 100000), a fresh database gets that many blocked
# deliveries (Benchmarks/pgbench/claim-backlog.sql: due, but behind a queue head waiting for
# its retry) and CLAIM_READY users (80000) with one claimable delivery per subscription; then
# pgbench runs the worker's claim and a finish (Benchmarks/pgbench/claim-deliveries.sql,
# `-M prepared`, one client pinned to the client core) for the bench's SECONDS. Per size:
# the claim's mean execution and planning time and rows per call (pg_stat_statements), and the
# deliveries claimed and finished per second. The claim's cost should not grow with the
# backlog (issue 23: within 2× from 1,000 to 100,000).
#
# Then the same backlog again, and the real worker (`serve --role workers`) delivers it to
# nginx's fast subscribers (scripts/bench-e2e.bash's): its deliveries finished per second over
# the same window after ECHORELAY_BENCH_WARMUP, beside pgbench's (issue 23: at least 0.8×), and
# its claim's mean time.

CLAIM_BACKLOGS="${CLAIM_BACKLOGS:-1000 100000}"
CLAIM_PER_USER=10   # blocked deliveries per user and subscription
CLAIM_READY="${CLAIM_READY:-80000}"  # enough that pgbench does not run dry in 8 s (20,000 did)
CLAIM_SQL=Benchmarks/pgbench/claim-deliveries.sql
# The settings' defaults: ECHORELAY_LEASE, ECHORELAY_SUBSCRIPTION_CONCURRENCY, ECHORELAY_DELIVERY_CONCURRENCY.
# The worker's own claims lease further ahead (DeliveryWorker.claimCap and claimLimit: four times
# these caps), so pgbench's claims, 32 rows each here, are smaller than the worker's (about 58).
CLAIM_DEFINES=(-D lease_seconds=60 -D cap=16 -D limit=64 -D answered={})

claim_fill() {  # DBURL BLOCKED: a fresh database with the backlog
    create_database echorelay_claim "$ECHORELAY_BIN"
    sql "$1" -v blocked_users=$(( $2 / (2 * CLAIM_PER_USER) )) -v per_user="$CLAIM_PER_USER" \
        -v ready="$CLAIM_READY" -f Benchmarks/pgbench/claim-backlog.sql >/dev/null
    prepare_point "$1"
    sql "$1" -c "SELECT pg_stat_statements_reset()" >/dev/null
}
claim_statement() {  # DBURL: "calls mean_exec_ms mean_plan_ms rows_per_call plans" of the claim (the file's first statement, by its first line)
    psql -XAt -F ' ' "$1" -v head="$(grep -v -e '^--' -e '^\\' "$CLAIM_SQL" | head -1)" <<'SQL'
SELECT calls, round(mean_exec_time::numeric, 3), round(mean_plan_time::numeric, 3), round(rows::numeric / greatest(calls, 1), 1), plans
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND left(query, length(:'head')) = :'head'
SQL
}
delivered() { psql -XAt "$1" -c "SELECT count(*) FROM deliveries WHERE status = 'delivered'"; }

claim_point() {  # BLOCKED: one backlog size, pgbench then the worker
    local blocked="$1" db tag="claim-$1"
    db="$(database_url echorelay_claim)"
    claim_fill "$db" "$blocked"
    taskset -c "$CLIENT_CPU" pgbench -n -j1 -c1 -M prepared "${CLAIM_DEFINES[@]}" -T "$SECONDS_EACH" -f "$CLAIM_SQL" \
        "$db" >"$OUT/claim/$tag.txt" 2>&1 || { cat "$OUT/claim/$tag.txt" >&2; exit 1; }
    local -a s
    read -r -a s <<<"$(claim_statement "$db")"
    local finished left_ready
    finished="$(delivered "$db")"
    left_ready="$(psql -XAt "$db" -c "SELECT count(*) FROM deliveries WHERE status = 'pending' AND user_id LIKE 'ready_%'")"
    save_statements "$db" "$OUT/claim/statements-$blocked.tsv"
    echo "pgbench blocked=$blocked ready=$(( 2 * CLAIM_READY )) calls=${s[0]:-0} mean_exec_ms=${s[1]:-} mean_plan_ms=${s[2]:-} rows_per_call=${s[3]:-} plans=${s[4]:-}" \
        "per_s=$(python3 -c "print(round($finished / $SECONDS_EACH))") ran_dry=$([[ "$left_ready" == 0 ]] && echo yes || echo no)" \
        >>"$OUT/claim/figures.txt"
    progress "claim behind $blocked blocked deliveries, pgbench: ${s[1]:-?} ms a call (${s[0]:-0} calls, ${s[3]:-?} rows each), $finished finished in $SECONDS_EACH s"

    # The worker, on the same backlog, delivering to nginx.
    claim_fill "$db" "$blocked"
    sql "$db" -c "UPDATE subscriptions SET url = replace(url, 'http://127.0.0.1:9/', 'http://127.0.0.1:$SUBSCRIBER_PORT/')" >/dev/null
    SERVE_EXTRA_ENV=(ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1)
    start_serve claim "$ECHORELAY_BIN" "$db" workers
    SERVE_EXTRA_ENV=()
    sleep "$WARMUP"
    local before after
    before="$(delivered "$db")"
    sql "$db" -c "SELECT pg_stat_statements_reset()" >/dev/null
    sleep "$SECONDS_EACH"
    after="$(delivered "$db")"
    read -r -a s <<<"$(claim_statement "$db")"
    save_statements "$db" "$OUT/claim/statements-worker-$blocked.tsv"
    stop_serve claim
    left_ready="$(psql -XAt "$db" -c "SELECT count(*) FROM deliveries WHERE status = 'pending' AND user_id LIKE 'ready_%'")"
    echo "worker blocked=$blocked ready=$(( 2 * CLAIM_READY )) calls=${s[0]:-0} mean_exec_ms=${s[1]:-} mean_plan_ms=${s[2]:-} rows_per_call=${s[3]:-} plans=${s[4]:-}" \
        "per_s=$(python3 -c "print(round(($after - $before) / $SECONDS_EACH))") ran_dry=$([[ "$left_ready" == 0 ]] && echo yes || echo no)" \
        >>"$OUT/claim/figures.txt"
    progress "claim behind $blocked blocked deliveries, worker: ${s[1]:-?} ms a call (${s[0]:-0} calls), $(( after - before )) finished in $SECONDS_EACH s"
}

claim_part() {
    mkdir -p "$OUT/claim"
    : >"$OUT/claim/figures.txt"
    DB="$(database_url postgres)" find_postmaster
    command -v nginx >/dev/null || { echo "bench: nginx is missing (apt-get install nginx-light)" >&2; exit 1; }
    declare -F start_nginx >/dev/null || source scripts/bench-e2e.bash
    start_nginx
    local size
    for size in $CLAIM_BACKLOGS; do claim_point "$size"; done
    stop_nginx "$OUT/claim"
    {
        echo "The worker's delivery claim (Benchmarks/pgbench/claim-deliveries.sql), run by pgbench \`-M prepared\` (one client) and by"
        echo "\`serve --role workers\` delivering to nginx, $SECONDS_EACH s each, behind blocked deliveries, with $(( 2 * CLAIM_READY ))"
        echo "claimable ones at the start:"
        echo
        echo "| blocked deliveries | who claims | claim: mean execution / planning ms | rows per claim | claims | claimed and finished/s |"
        echo "|---:|---|---:|---:|---:|---:|"
        awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
               printf "| %\047d | %s | %s / %s | %s | %s | %\047d%s |\n", f["blocked"], $1, f["mean_exec_ms"], f["mean_plan_ms"],
                      f["rows_per_call"], f["calls"], f["per_s"], (f["ran_dry"] == "yes" ? " (ran dry: a lower bound)" : "") }' \
            "$OUT/claim/figures.txt"
        python3 - "$OUT/claim/figures.txt" <<'PY'
import sys
rows = [(line.split()[0], dict(p.split("=", 1) for p in line.split()[1:])) for line in open(sys.argv[1])]
for who in ("pgbench", "worker"):
    times = [float(r["mean_exec_ms"]) for w, r in rows if w == who and r.get("mean_exec_ms")]
    if len(times) >= 2 and times[0] > 0:
        print(f"\n{who}: the largest backlog's claim takes {times[-1] / times[0]:.2f}× the smallest's (goal: within 2×).")
pg = {r["blocked"]: float(r["per_s"]) for w, r in rows if w == "pgbench"}
for w, r in rows:
    if w == "worker" and pg.get(r["blocked"]):
        print(f"\nBehind {int(r['blocked']):,}: the worker finishes {float(r['per_s']) / pg[r['blocked']]:.2f}× pgbench's rate (goal: at least 0.8×).")
PY
    } | tee "$OUT/claim.md"
}
