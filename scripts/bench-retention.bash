# The `retention` part of scripts/bench, which sources this file (and bench-e2e.bash, whose
# world and steps it reuses) and calls retention_part: what retention costs and what it saves.
#
#   fill      RETENTION_FILL_RATE events/s (400) for RETENTION_FILL_SECONDS (50) through
#             `serve --role all` to two ordered subscriptions, with retention off, drained
#   bytes     per event, table plus indexes (pg_total_relation_size after VACUUM FULL, so only
#             live rows count) of events, deliveries and delivery_attempts: after the fill, and
#             after `echorelay prune` has cut every event to its receipt; and the receipt's row
#   noise     the latency step of the e2e part (E2E_LATENCY_RATE, 200 events/s, E2E_SECONDS),
#             RETENTION_ROUNDS (3) rounds of
#             AB: A with retention off, B with ECHORELAY_RETAIN_EVENTS and _ATTEMPTS of 1s
#             and ECHORELAY_PRUNE_INTERVAL=1s, so that the pruner works through the fill and
#             then keeps up with the new events during B's window; serve restarts between them
#
# Results: bench-results/retention.md, and the steps' lines in e2e/figures.txt (codes rA1, rB1…).

RETENTION_FILL_RATE="${RETENTION_FILL_RATE:-400}"
RETENTION_FILL_SECONDS="${RETENTION_FILL_SECONDS:-50}"
RETENTION_ROUNDS="${RETENTION_ROUNDS:-3}"

retention_serve() {  # keep|prune: (re)starts serve e2e on the retention database
    [[ -z "${SERVE_PID[e2e]:-}" ]] || stop_serve e2e
    SERVE_EXTRA_ENV=(ECHORELAY_ECHO_ALLOW_HTTP=1 ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1)
    if [[ $1 == keep ]]; then
        SERVE_EXTRA_ENV+=(ECHORELAY_RETAIN_EVENTS=0 ECHORELAY_RETAIN_ATTEMPTS=0)
    else
        SERVE_EXTRA_ENV+=(ECHORELAY_RETAIN_EVENTS=1s ECHORELAY_RETAIN_ATTEMPTS=1s ECHORELAY_PRUNE_INTERVAL=1s)
    fi
    start_serve e2e "$ECHORELAY_BIN" "$E2E_DB" all
    SERVE_EXTRA_ENV=()
}

retention_bytes() {  # WHEN: one line of sizes per event in retention/figures.txt
    sql "$E2E_DB" -c "VACUUM FULL events" -c "VACUUM FULL deliveries" -c "VACUUM FULL delivery_attempts" >/dev/null
    psql -XAtq -F ' ' "$E2E_DB" -c "
        SELECT '$1',
               (SELECT count(*) FROM events), (SELECT count(*) FROM events WHERE pruned_at IS NOT NULL),
               (SELECT count(*) FROM deliveries), (SELECT count(*) FROM delivery_attempts),
               pg_total_relation_size('events'), pg_total_relation_size('deliveries'),
               pg_total_relation_size('delivery_attempts'),
               (SELECT coalesce(round(avg(pg_column_size(e.*))), 0) FROM events e WHERE pruned_at IS NOT NULL),
               (SELECT coalesce(round(avg(pg_column_size(e.*))), 0) FROM events e WHERE pruned_at IS NULL)" \
        >>"$OUT/retention/figures.txt"
    progress "retention bytes ($1): $(tail -1 "$OUT/retention/figures.txt")"
}

retention_part() {
    mkdir -p "$OUT/e2e" "$OUT/retention"
    : >"$OUT/retention/figures.txt"
    command -v nginx >/dev/null || { echo "bench: nginx is missing (apt-get install nginx-light)" >&2; exit 1; }
    E2E_DB="$(database_url echorelay_retention)"
    create_database echorelay_retention "$ECHORELAY_BIN"
    DB="$E2E_DB" find_postmaster
    start_nginx
    ALLOWED_HOSTS="127.0.0.1:$PROVIDER_PORT"
    retention_serve keep
    subscribe a >/dev/null
    subscribe b >/dev/null

    progress "retention: filling with $(( RETENTION_FILL_RATE * RETENTION_FILL_SECONDS )) events at $RETENTION_FILL_RATE/s"
    e2e_step fill "$RETENTION_FILL_RATE" "$RETENTION_FILL_SECONDS" rfill 64
    retention_bytes kept

    local round side
    for round in $(seq "$RETENTION_ROUNDS"); do
        for side in A B; do
            if [[ $side == A ]]; then retention_serve keep; else retention_serve prune; fi
            e2e_step latency "$E2E_LATENCY_RATE" "$E2E_SECONDS" "r$side$round" 64
            local pruned
            pruned="$(curl -fsS "http://127.0.0.1:${SERVE_PORT[e2e]}/metrics" | awk '/^echorelay_pruned_total\{what="events"\}/ {print $2}')"
            echo "noise side=$side round=$round p50_ms=$(e2e_field p50_ms) p99_ms=$(e2e_field p99_ms) serve_cpu_s=$(e2e_field serve_cpu_s) pg_cpu_s=$(e2e_field pg_cpu_s) completed_rate=$(e2e_field completed_rate) pruned_events=${pruned:-0}" \
                >>"$OUT/retention/figures.txt"
            progress "retention noise $side$round: p50 $(e2e_field p50_ms) ms, p99 $(e2e_field p99_ms) ms, events pruned by then ${pruned:-0}"
        done
    done
    stop_serve e2e
    stop_nginx "$OUT/retention"

    # Whatever the last window left, cut to receipts now.
    env $(env | awk -F= '/^ECHORELAY_/ {print "-u " $1}') ECHORELAY_DATABASE_URL="$E2E_DB" ECHORELAY_RETAIN_EVENTS=1s \
        ECHORELAY_RETAIN_ATTEMPTS=1s "$ECHORELAY_BIN" prune --log-level error >"$OUT/retention/prune.txt"
    retention_bytes pruned
    python3 Benchmarks/retention-report.py "$OUT" | tee "$OUT/retention.md"
}
