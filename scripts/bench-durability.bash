# The `durability` part of scripts/bench, which sources this file and calls durability_part:
# what ECHORELAY_DURABILITY=standby costs ingest beside local, in the same run.
#
# A streaming standby of the bench's PostgreSQL (scripts/postgres-instance standby: physical,
# asynchronous, durable, on this machine) runs for the whole part, so both sides write the same
# WAL to it and differ only in the wait: two `serve --role ingest` on one database, one with
# ECHORELAY_DURABILITY=local and one with standby. DURABILITY_ROUNDS (3) rounds of ABAB (BA in
# every other round) at ECHORELAY_BENCH_CONNECTIONS (32) connections, then the same at one
# connection, where the latency is one event's own.
#
# Needs the bench's server on this machine, reachable at 127.0.0.1 (the default private one is).
# Results: bench-results/durability.md, and the points in points.tsv (parts durability and
# one-durability, sides local and standby).

DURABILITY_ROUNDS="${DURABILITY_ROUNDS:-3}"

durability_part() {
    local port standby_dir standby_port db
    port="$(python3 -c 'import sys, urllib.parse as u; print(u.urlsplit(sys.argv[1]).port or 5432)' "$ECHORELAY_BENCH_DATABASE_URL")"
    standby_dir="$(mktemp -d /tmp/echorelay-bench-standby.XXXXXX)"
    standby_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    progress "durability: a streaming standby of 127.0.0.1:$port on $standby_port"
    ECHORELAY_PG_DURABLE=1 scripts/postgres-instance standby "$standby_dir" "$port" >&2
    ECHORELAY_PG_DURABLE=1 scripts/postgres-instance start "$standby_dir" "$standby_port" >&2
    DURABILITY_STANDBY_DIR="$standby_dir"
    local deadline=$(( $(date +%s) + 60 ))
    until [[ "$(psql -XAt "$ECHORELAY_BENCH_DATABASE_URL" -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" -ge 1 ]]; do
        (( $(date +%s) < deadline )) || { echo "bench: the standby never streamed" >&2; exit 1; }
        sleep 0.2
    done

    create_database echorelay_durability "$ECHORELAY_BIN"
    db="$(database_url echorelay_durability)"
    start_serve local "$ECHORELAY_BIN" "$db" ingest
    SERVE_EXTRA_ENV=(ECHORELAY_DURABILITY=standby)
    start_serve standby "$ECHORELAY_BIN" "$db" ingest
    SERVE_EXTRA_ENV=()

    local part connections round side order
    for part in durability one-durability; do
        connections="$CONNECTIONS"
        [[ $part == one-durability ]] && connections=1
        progress "$part: local and standby at $connections connections, $DURABILITY_ROUNDS rounds"
        for round in $(seq "$DURABILITY_ROUNDS"); do
            order=(local standby)
            (( round % 2 == 0 )) && order=(standby local)
            for side in "${order[@]}"; do
                standby_caught_up
                wrk_point "$part" "$round" "$side" "$side" "$connections" "$db" "$([[ $connections == 1 ]] && echo 1500 || echo 8000)"
            done
        done
    done
    stop_serve local
    stop_serve standby
    scripts/postgres-instance remove "$standby_dir" >&2
    DURABILITY_STANDBY_DIR=""
    durability_report | tee "$OUT/durability.md"
}

# Until the standby has flushed all the WAL written so far: a standby still behind from the
# last point (the standby shares this machine's cores and disk) would make the next standby
# point wait for that lag, and not for its own commits.
standby_caught_up() {
    local deadline=$(( $(date +%s) + 120 ))
    until [[ "$(psql -XAt "$ECHORELAY_BENCH_DATABASE_URL" -c "SELECT bool_and(flush_lsn >= pg_current_wal_lsn()) FROM pg_stat_replication WHERE state = 'streaming'")" == t ]]; do
        (( $(date +%s) < deadline )) || { echo "bench: the standby did not catch up within 120 s" >&2; exit 1; }
        sleep 0.2
    done
}

durability_report() {  # the points of both parts as a table, with each side's median
    python3 - "$POINTS" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["part"] in ("durability", "one-durability")]
print("| connections | side | rounds: events/s | median events/s | median p50 ms | median p99 ms | non-2xx |")
print("|---|---|---|---|---|---|---|")
for part in ("durability", "one-durability"):
    for side in ("local", "standby"):
        points = [r for r in rows if r["part"] == part and r["side"] == side]
        if not points:
            continue
        rates = [float(r["rate"]) for r in points]
        print(f"| {points[0]['connections']} | {side} | {', '.join(f'{x:,.0f}' for x in rates)} | **{statistics.median(rates):,.0f}** "
              f"| {statistics.median(float(r['p50_ms']) for r in points):.2f} | {statistics.median(float(r['p99_ms']) for r in points):.2f} "
              f"| {sum(int(r['non2xx'] or 0) for r in points)} |")
EOF
}
