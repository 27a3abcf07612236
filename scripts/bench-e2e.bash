# The `e2e` part of scripts/bench, which sources this file and calls e2e_part: EchoRelay from
# ingest to two subscribers, against the light ingest ceiling of the same run. It uses
# scripts/bench's helpers (sql, create_database, start_serve, pg_counters, ticks, progress…).
#
# The world: a release `serve --role all` on the durable PostgreSQL; two ordered
# subscriptions for token.rotated and phone.changed; one nginx on loopback (Benchmarks/e2e/
# nginx.conf) playing a fast OAuth Echo provider and both subscribers, which log each
# delivery's arrival time, webhook-id and body and check no signature. nginx and the pacer
# (Benchmarks/e2e/pace.py, open loop over keep-alive connections) are pinned to the client core.
#
# Figures (bench-results/e2e/, table in bench-results/e2e.md, Benchmarks/e2e/report.py; each
# step's top statements from pg_stat_statements in e2e/statements-<step>.tsv):
#   lone       E2E_LONE events (50) one at a time, each after both subscribers have the
#              previous: transaction ids and commits per event, and its latency
#   ceiling    pgbench Benchmarks/pgbench/ingest.sql at 32 clients, before and after the steps
#   floor      the same world's HTTP alone: echorelay-http-floor (Benchmarks/http-floor) in
#              serve's place does an event's exchanges (one POST in; one echo GET and two
#              deliveries out) and nothing else, under wrk at 64 connections: no EchoRelay on
#              serve's HTTP libraries can pass its rate here (ECHORELAY_FLOOR_BIN, else built)
#   pipeline   the database's side: pgbench Benchmarks/pgbench/pipeline.sql (an event's whole life
#              in the lightest durable SQL for EchoRelay's rows, batched); with the floor's
#              machine CPU per event it bounds the end-to-end rate of any relay of these rows
#   latency    E2E_LATENCY_RATE events/s (200) open loop: p50/p99 intended send → subscriber,
#              after a warm-up at that rate (ECHORELAY_BENCH_WARMUP s, at least 3)
#   onecore    the same, with serve and PostgreSQL (the postmaster and every backend, so the
#              backends it starts later too) confined to the core the clients leave
#              (`taskset`): a machine about half as fast, where fixed waits show
#   steps      the offered rate from E2E_START_RATE (100) up by half each step until a step is
#              not sustained (analyse.py says what that means), then once halfway back; at
#              most E2E_MAX_STEPS (10)
#   overload   twice the highest sustained rate for E2E_OVERLOAD_SECONDS (30): per 5 s,
#              acknowledged and completed events and the backlog; 503s, losses, drain time
# The embedded store: E2E_STORE=embedded runs the same steps on `serve` with the SQLite store
# (a file beside the results, on disk: WAL, synchronous=FULL), without the PostgreSQL parts
# (ceiling, floor, transaction counts, statements); give it its own ECHORELAY_BENCH_OUT.
# Profiling (not part of the figures): E2E_RATES="900 1200" runs exactly those steps (no
# search, no overload unless E2E_OVERLOAD_RATE is set); E2E_SKIP="lone latency ceiling" leaves
# those out ("steps" leaves out the steps and the overload: E2E_SKIP="lone latency steps" is the
# bound alone, in about three minutes); E2E_PERF=1 records serve with `perf record -g -F 499` (or E2E_PERF_OPTIONS, for example "--call-graph dwarf -F 99") during every step (e2e/perf-<code>.data,
# read with `perf report -i`).
# Every step starts vacuumed, analysed and checkpointed (prepare_point), lasts E2E_SECONDS
# (default: the bench's SECONDS, at least 10) and drains (up to E2E_DRAIN_LIMIT s, 600) before
# the next. serve's peak RSS (VmHWM) is read after each.

E2E_SECONDS="${E2E_SECONDS:-$(( SECONDS_EACH > 10 ? SECONDS_EACH : 10 ))}"
E2E_LONE="${E2E_LONE:-50}"
E2E_LATENCY_RATE="${E2E_LATENCY_RATE:-200}"
E2E_START_RATE="${E2E_START_RATE:-100}"
E2E_MAX_STEPS="${E2E_MAX_STEPS:-10}"
E2E_OVERLOAD_SECONDS="${E2E_OVERLOAD_SECONDS:-30}"
E2E_DRAIN_LIMIT="${E2E_DRAIN_LIMIT:-600}"
E2E_RATES="${E2E_RATES:-}"
E2E_SKIP="${E2E_SKIP:-}"
E2E_PERF="${E2E_PERF:-0}"
E2E_STORE="${E2E_STORE:-postgres}"
embedded() { [[ "$E2E_STORE" == embedded ]]; }
e2e_skips() { [[ " $E2E_SKIP " == *" $1 "* ]]; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_nginx() {  # the provider and the subscribers, pinned to the client core
    E2E_NGINX="$WORK/nginx"
    mkdir -p "$E2E_NGINX/tmp"
    PROVIDER_PORT="$(free_port)" SUBSCRIBER_PORT="$(free_port)"
    sed -e "s#@DIR@#$E2E_NGINX#g; s#@PROVIDER_PORT@#$PROVIDER_PORT#g" \
        -e "s#@SUBSCRIBER_PORT@#$SUBSCRIBER_PORT#g; s#@SINK_PORT@#$(free_port)#g" \
        Benchmarks/e2e/nginx.conf >"$E2E_NGINX/nginx.conf"
    : >"$E2E_NGINX/subscriber-a.log"
    : >"$E2E_NGINX/subscriber-b.log"
    taskset -c "$CLIENT_CPU" nginx -p "$E2E_NGINX" -c "$E2E_NGINX/nginx.conf" -e "$E2E_NGINX/nginx-error.log" \
        -g 'daemon off;' </dev/null >"$E2E_NGINX/nginx.out" 2>&1 &
    NGINX_PID=$!
    until curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PROVIDER_PORT/1.1/account/verify_credentials.json" 2>/dev/null; do
        kill -0 "$NGINX_PID" 2>/dev/null || { echo "bench: nginx did not start:" >&2; cat "$E2E_NGINX"/nginx.out "$E2E_NGINX"/nginx-error.log >&2; exit 1; }
        sleep 0.1
    done
}
stop_nginx() {  # FOLDER: where its logs go
    [[ -n "${NGINX_PID:-}" ]] || return 0
    kill -QUIT "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=""
    cp "$E2E_NGINX"/subscriber-*.log "$E2E_NGINX"/nginx.out "$E2E_NGINX"/nginx-error.log "$1" 2>/dev/null || true
}

subscribe() {  # NAME: an ordered subscription for /hooks/NAME; prints its id
    curl -fsS -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d "{\"url\":\"http://127.0.0.1:$SUBSCRIBER_PORT/hooks/$1\",\"event_types\":[\"token.rotated\",\"phone.changed\"],\"ordered\":true}" \
        "http://127.0.0.1:${SERVE_PORT[e2e]}/v1/subscriptions" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

peak_rss_mb() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/${SERVE_PID[e2e]}/status"; }

make_e2e_events() {  # COUNT FILE CODE
    python3 Benchmarks/wrk/make-events.py "$1" "$2" --prefix "${RUN}e$3" \
        --provider "http://127.0.0.1:$PROVIDER_PORT/1.1/account/verify_credentials.json"
}

# One line per measurement in e2e/figures.txt: "<kind> key=value …", read by report.py.
e2e_record() { echo "$*" >>"$OUT/e2e/figures.txt"; }
e2e_logs() { echo "$E2E_NGINX/subscriber-a.log" "$E2E_NGINX/subscriber-b.log"; }

# Counters around a measurement: transaction ids, commits (after STATS_WAIT_IDLE, see
# scripts/bench), CPU of serve and PostgreSQL.
E2E_BEFORE=()
# On the embedded store: no database counters, only serve's CPU (the same field positions).
store_counters() { if embedded; then echo "0 0 0 0 0 0 0"; else pg_counters "$E2E_DB"; fi; }
e2e_counters_before() {
    sleep "$STATS_WAIT_IDLE"
    read -r -a E2E_BEFORE <<<"$(store_counters) $(ticks "${SERVE_PID[e2e]}") $(switches "${SERVE_PID[e2e]}") $(pg_ticks)"
    E2E_BEFORE_AT=$EPOCHREALTIME
}
e2e_counters_after() {  # prints key=value for what changed since e2e_counters_before
    sleep "$STATS_WAIT_IDLE"
    local -a a
    read -r -a a <<<"$(store_counters) $(ticks "${SERVE_PID[e2e]}") $(switches "${SERVE_PID[e2e]}") $(pg_ticks)"
    local elapsed
    elapsed="$(python3 -c "print(round($EPOCHREALTIME - $E2E_BEFORE_AT, 2))")"
    local -a b=("${E2E_BEFORE[@]}")
    local serve="serve_cpu_s=$(seconds_of "${b[7]}" "${a[7]}") serve_switches=$(( a[8] - b[8] ))"
    if embedded; then
        echo "$serve counted_s=$elapsed"
        return
    fi
    echo "xids=$(( a[1] - b[1] )) commits=$(( a[2] - b[2] )) wal_bytes=$(( a[3] - b[3] ))" \
        "$serve pg_cpu_s=$(seconds_of "${b[9]:-}" "${a[9]:-}")" \
        "counted_s=$elapsed"
}

autovacuum() {  # off, or back to the server's own setting (on); a worker already running finishes its table
    local change="ALTER SYSTEM RESET autovacuum"
    [[ $1 == off ]] && change="ALTER SYSTEM SET autovacuum = off"
    sql "$ECHORELAY_BENCH_DATABASE_URL" -c "$change" -c "SELECT pg_reload_conf()" >/dev/null
}

e2e_lone() {
    local file="$WORK/lone.req" pace="$OUT/e2e/lone-pace.tsv"
    make_e2e_events $(( E2E_LONE + 5 )) "$file" lone
    # Five first, outside the counters: the first ones open serve's connections to the provider
    # and the subscribers.
    taskset -c "$CLIENT_CPU" python3 Benchmarks/e2e/pace.py "http://127.0.0.1:${SERVE_PORT[e2e]}" <(tail -5 "$file") \
        "$OUT/e2e/lone-warm.tsv" --one-by-one 5 --logs "$(e2e_logs | tr ' ' ,)" >/dev/null
    # The transaction ids counted are the whole server's: an autovacuum ANALYZE (of these
    # tables, past 50 new rows, or of an earlier part's database) takes one too. Autovacuum
    # is off for these two windows, so that they count EchoRelay's transactions alone.
    embedded || autovacuum off
    # What serve does when idle, over the same wait, is counted apart so it can be told from the events.
    e2e_counters_before
    e2e_record "idle $(e2e_counters_after)"
    e2e_counters_before
    taskset -c "$CLIENT_CPU" python3 Benchmarks/e2e/pace.py "http://127.0.0.1:${SERVE_PORT[e2e]}" "$file" "$pace" \
        --one-by-one "$E2E_LONE" --logs "$(e2e_logs | tr ' ' ,)" >/dev/null
    e2e_record "lone events=$E2E_LONE $(e2e_counters_after) $(python3 Benchmarks/e2e/analyse.py step "$pace" $(e2e_logs) --rate 1 --seconds 1 | cut -d' ' -f2-) peak_rss_mb=$(peak_rss_mb)"
    embedded || autovacuum on
    progress "e2e lone: $(tail -1 "$OUT/e2e/figures.txt" | grep -o 'xids=[0-9]* commits=[0-9]*') for $E2E_LONE events"
}

e2e_ceiling() {  # WHEN: the light ingest ceiling on a database of its own
    local tag="ceiling-$1"
    prepare_point "$E2E_CEILING_DB"
    taskset -c "$CLIENT_CPU" pgbench -n -j1 -c"$CONNECTIONS" -M prepared -T "$WARMUP" -f Benchmarks/pgbench/ingest.sql "$E2E_CEILING_DB" >/dev/null 2>&1
    local machine_before machine_after
    machine_before="$(machine_ticks)"
    taskset -c "$CLIENT_CPU" pgbench -n -j1 -c"$CONNECTIONS" -M prepared -T "$SECONDS_EACH" -f Benchmarks/pgbench/ingest.sql \
        "$E2E_CEILING_DB" >"$OUT/e2e/$tag.txt" 2>&1 || { cat "$OUT/e2e/$tag.txt" >&2; exit 1; }
    machine_after="$(machine_ticks)"
    e2e_record "ceiling when=$1 tps=$(awk '/^tps/ {print $3}' "$OUT/e2e/$tag.txt")" \
        "machine_cpu_ms=$(per_event_ms "$machine_before" "$machine_after" "$(processed "$OUT/e2e/$tag.txt")")"
    progress "e2e light ingest ceiling ($1): $(awk '/^tps/ {printf "%.0f", $3}' "$OUT/e2e/$tag.txt") tx/s"
}

e2e_floor() {
    local port file="$WORK/floor.req" pid before after nginx_before nginx_after machine_before machine_after line
    port="$(free_port)"
    "$ECHORELAY_FLOOR_BIN" "$port" "http://127.0.0.1:$PROVIDER_PORT/1.1/account/verify_credentials.json" \
        "http://127.0.0.1:$SUBSCRIBER_PORT" >"$OUT/e2e/floor.log" 2>&1 &
    pid=$!
    until curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/"; do
        kill -0 "$pid" 2>/dev/null || { echo "bench: echorelay-http-floor did not start:" >&2; cat "$OUT/e2e/floor.log" >&2; exit 1; }
        sleep 0.1
    done
    # More requests than the floor can take in the window (it stores nothing, so the warm-up
    # may send the same ones).
    make_e2e_events $(( 12000 * SECONDS_EACH )) "$file" floor
    taskset -c "$CLIENT_CPU" wrk -t1 -c64 -d"${WARMUP}s" -s Benchmarks/wrk/replay.lua "http://127.0.0.1:$port" -- "$file" >/dev/null 2>&1
    before="$(ticks "$pid")" nginx_before="$(nginx_ticks)" machine_before="$(machine_ticks)"
    taskset -c "$CLIENT_CPU" wrk -t1 -c64 -d"${SECONDS_EACH}s" -s Benchmarks/wrk/replay.lua "http://127.0.0.1:$port" -- "$file" \
        >"$OUT/e2e/floor-wrk.txt" 2>&1
    after="$(ticks "$pid")" nginx_after="$(nginx_ticks)" machine_after="$(machine_ticks)"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -f "$file"
    # The subscribers logged the floor's deliveries too: the steps read these logs afresh
    # (nginx appends, so truncating them is safe).
    : >"$E2E_NGINX/subscriber-a.log"
    : >"$E2E_NGINX/subscriber-b.log"
    line="$(grep '^replay ' "$OUT/e2e/floor-wrk.txt")"
    python3 - "$line" "$before" "$after" "$nginx_before" "$nginx_after" "$machine_before" "$machine_after" "$TICK" \
        >>"$OUT/e2e/figures.txt" <<'PY'
import sys
line, before, after, nginx_before, nginx_after, machine_before, machine_after, tick = sys.argv[1:]
f = dict(p.split("=", 1) for p in line.split()[1:])
requests, seconds = int(f["requests"]), int(f["duration_us"]) / 1e6
ms = lambda a, b: (int(b) - int(a)) / int(tick) * 1000 / max(requests, 1)
print(f"floor rate={requests / seconds:.0f} non2xx={f['non2xx']} socket_errors={f['socket_errors']} "
      f"floor_cpu_ms={ms(before, after):.3f} nginx_cpu_ms={ms(nginx_before, nginx_after):.3f} "
      f"client_cpu_ms={float(f['client_cpu_s']) * 1000 / max(requests, 1):.3f} "
      f"machine_cpu_ms={ms(machine_before, machine_after):.3f}")
PY
    E2E_LAST="$(tail -1 "$OUT/e2e/figures.txt")"
    progress "e2e HTTP floor: $(e2e_field rate) events/s, $(e2e_field floor_cpu_ms) ms of its CPU, $(e2e_field nginx_cpu_ms) ms of nginx's and $(e2e_field machine_cpu_ms) ms of the machine's an event"
}

# The database's side of the same bound: pgbench runs Benchmarks/pgbench/pipeline.sql, an event's
# whole life in the lightest durable SQL for EchoRelay's rows, E2E_PIPELINE_BATCH events a
# transaction on E2E_PIPELINE_CLIENTS clients (the lightest per event found: 128 on 4), on a
# database of its own. The
# machine's CPU per event here plus the HTTP floor's is what any relay of these rows spends
# before doing anything of its own, so the cores divided by it bound the end-to-end rate.
E2E_PIPELINE_BATCH="${E2E_PIPELINE_BATCH:-128}"
E2E_PIPELINE_CLIENTS="${E2E_PIPELINE_CLIENTS:-4}"
e2e_pipeline() {
    local tag=pipeline machine_before machine_after events
    sql "$E2E_PIPELINE_DB" -c "INSERT INTO subscriptions (id, url, event_types, secret) VALUES
        ('bench_a', 'http://127.0.0.1:1/a', '{token.rotated,phone.changed}', 'whsec_unused'),
        ('bench_b', 'http://127.0.0.1:1/b', '{token.rotated,phone.changed}', 'whsec_unused')
        ON CONFLICT (id) DO NOTHING" >/dev/null
    local -a run=(pgbench -n -j1 -c"$E2E_PIPELINE_CLIENTS" -M prepared -D batch="$E2E_PIPELINE_BATCH" -f Benchmarks/pgbench/pipeline.sql)
    taskset -c "$CLIENT_CPU" "${run[@]}" -T "$WARMUP" "$E2E_PIPELINE_DB" >/dev/null 2>&1
    prepare_point "$E2E_PIPELINE_DB"  # analysed with rows in every table the script writes
    machine_before="$(machine_ticks)"
    taskset -c "$CLIENT_CPU" "${run[@]}" -T "$SECONDS_EACH" "$E2E_PIPELINE_DB" >"$OUT/e2e/$tag.txt" 2>&1 || { cat "$OUT/e2e/$tag.txt" >&2; exit 1; }
    machine_after="$(machine_ticks)"
    events=$(( $(processed "$OUT/e2e/$tag.txt") * E2E_PIPELINE_BATCH ))
    e2e_record "pipeline batch=$E2E_PIPELINE_BATCH clients=$E2E_PIPELINE_CLIENTS rate=$(python3 -c "print(round($events / $SECONDS_EACH))")" \
        "machine_cpu_ms=$(per_event_ms "$machine_before" "$machine_after" "$events")"
    E2E_LAST="$(tail -1 "$OUT/e2e/figures.txt")"
    progress "e2e pipeline's SQL alone: $(e2e_field rate) events/s, $(e2e_field machine_cpu_ms) ms of the machine's CPU an event"
}
# pgbench's count of transactions in its report FILE; the machine's CPU ms per event from two
# machine_ticks readings and a count.
processed() { awk '/number of transactions actually processed/ {print $NF}' "$1"; }
per_event_ms() { python3 -c "print(round(($2 - $1) / $TICK * 1000 / max($3, 1), 4))"; }
# nginx's master and its workers (which do the work): the client core's share of every exchange.
nginx_ticks() {
    local total child
    total="$(ticks "$NGINX_PID")"
    for child in $(pgrep -P "$NGINX_PID"); do total=$(( total + $(ticks "$child") )); done
    echo "$total"
}

e2e_step() {  # KIND RATE SECONDS CODE CONNECTIONS: an open-loop step, drained; prints analyse.py's line
    local kind="$1" rate="$2" seconds="$3" code="$4" connections="$5"
    local file="$WORK/$code.req" pace="$OUT/e2e/$code-pace.tsv" count
    count="$(python3 -c "print(int($rate * $seconds))")"
    make_e2e_events "$count" "$file" "$code"
    if embedded; then prepare_point; else prepare_point "$E2E_DB"; fi  # as every ingest point: vacuumed, analysed, checkpointed
    e2e_counters_before
    embedded || sql "$E2E_DB" -c "SELECT pg_stat_statements_reset()" >/dev/null
    local pace_line wait_line perf_pid=""
    if [[ "$E2E_PERF" == 1 ]]; then
        perf record ${E2E_PERF_OPTIONS:--g -F 499} -o "$OUT/e2e/perf-$code.data" -p "${SERVE_PID[e2e]}" >/dev/null 2>&1 &
        perf_pid=$!
    fi
    local sampler_pid=""
    if [[ "$kind" == overload ]] && ! embedded; then
        e2e_sample_statements "$E2E_DB" "$OUT/e2e/$code-statements-by-5s.tsv" &
        sampler_pid=$!
    fi
    pace_line="$(taskset -c "$CLIENT_CPU" python3 Benchmarks/e2e/pace.py "http://127.0.0.1:${SERVE_PORT[e2e]}" "$file" "$pace" \
        --rate "$rate" --seconds "$seconds" --connections "$connections" | tail -1)"
    if [[ -n "$perf_pid" ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
    if [[ -n "$sampler_pid" ]]; then kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null || true; fi
    wait_line="$(taskset -c "$CLIENT_CPU" python3 Benchmarks/e2e/analyse.py wait "$pace" $(e2e_logs) --timeout "$E2E_DRAIN_LIMIT")"
    local counters analysis
    counters="$(e2e_counters_after)"
    embedded || save_statements "$E2E_DB" "$OUT/e2e/statements-$code.tsv"
    if [[ "$kind" == overload ]]; then
        analysis="$(python3 Benchmarks/e2e/analyse.py overload "$pace" $(e2e_logs) --rate "$rate" --seconds "$seconds" --windows "$OUT/e2e/overload-windows.tsv")"
    else
        analysis="$(python3 Benchmarks/e2e/analyse.py step "$pace" $(e2e_logs) --rate "$rate" --seconds "$seconds")"
    fi
    rm -f "$file"
    e2e_record "$kind code=$code seconds=$seconds connections=$connections ${analysis#* } ${wait_line#wait } ${pace_line#pace } $counters peak_rss_mb=$(peak_rss_mb)"
    E2E_LAST="$(tail -1 "$OUT/e2e/figures.txt")"
}
# Every 5 s while an overload is offered, the statements' running totals, the sizes of the
# delivery queue's indexes, the WAL written (and its full-page images), the checkpoints
# started, any vacuum running and the machine's CPU time, one row each with the time: the overload's completions fell
# from window to window in some runs and not in others (BENCHMARKS.md, runs X and Y), and the
# difference between two rows says which statement grew dearer. Runs on the client core.
e2e_sample_statements() {  # DBURL FILE
    while true; do
        taskset -c "$CLIENT_CPU" psql -XAt -F $'\t' "$1" -c "
            SELECT extract(epoch FROM now()), 'statement', queryid::text, calls, round(total_exec_time::numeric, 1),
                   rows, left(regexp_replace(query, '\s+', ' ', 'g'), 60)
            FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            UNION ALL
            SELECT extract(epoch FROM now()), 'index', indexrelname, pg_relation_size(indexrelid), NULL, NULL, NULL
            FROM pg_stat_user_indexes WHERE relname = 'deliveries'
            UNION ALL
            SELECT extract(epoch FROM now()), 'wal', 'bytes', wal_bytes, wal_fpi, NULL, NULL FROM pg_stat_wal
            UNION ALL
            SELECT extract(epoch FROM now()), 'checkpoints', 'started', checkpoints_timed + checkpoints_req, NULL, NULL, NULL
            FROM pg_stat_bgwriter
            UNION ALL
            SELECT extract(epoch FROM now()), 'vacuum', p.relid::regclass::text, p.heap_blks_scanned, NULL, NULL, NULL
            FROM pg_stat_progress_vacuum p" >>"$2" 2>/dev/null || true
        # The machine's CPU time so far (jiffies), in all and per core: busy, idle and stolen,
        # to tell a window the machine spent working from one it spent waiting, and the client
        # core (the load generator and nginx) from the others.
        local at name user nice system idle iowait irq softirq steal rest
        at="$(date +%s.%N)"
        while read -r name user nice system idle iowait irq softirq steal rest; do
            [[ $name == cpu* ]] || continue
            printf '%s\tcpu\t%s\t%s\t%s\t%s\t\n' "$at" "$name" $(( user + nice + system + irq + softirq )) \
                $(( idle + iowait )) "$steal" >>"$2"
        done </proc/stat
        sleep 5
    done
}
e2e_field() { grep -o "\b$1=[^ ]*" <<<"$E2E_LAST" | head -1 | cut -d= -f2; }  # NAME: from the last step

e2e_fixed_steps() {  # E2E_RATES, then the overload at E2E_OVERLOAD_RATE if set; no report
    local rate n=0
    for rate in $E2E_RATES; do
        n=$(( n + 1 ))
        e2e_step step "$rate" "$E2E_SECONDS" "f$n" 64
        progress "e2e fixed step $n: $rate events/s offered, $(e2e_field completed_rate) completed/s, serve CPU $(e2e_field serve_cpu_s) s, PostgreSQL CPU $(e2e_field pg_cpu_s) s, sustained $(e2e_field sustained)"
    done
    if [[ -n "${E2E_OVERLOAD_RATE:-}" ]]; then
        e2e_step overload "$E2E_OVERLOAD_RATE" "$E2E_OVERLOAD_SECONDS" ov 128
        progress "e2e overload at $E2E_OVERLOAD_RATE events/s: $(e2e_field acknowledged_rate) acknowledged/s, $(e2e_field completed_rate) completed/s, backlog max $(e2e_field backlog_max)"
    fi
    stop_serve e2e
    stop_nginx "$OUT/e2e"
}

# The ceiling and the pipeline fill databases of their own; left alone, autovacuum works
# through them during the steps that follow, on the machine's two cores (the latency at 200
# events/s, alone: p99 9.0 ms; right after them: 20.6). So they are vacuumed now, and the
# steps wait for every autovacuum worker to finish (at most a minute).
e2e_settle() {
    local db waited=0
    for db in "$E2E_CEILING_DB" "$E2E_PIPELINE_DB"; do
        psql -XAtq "$db" -c "SELECT 1" >/dev/null 2>&1 && sql "$db" -c "VACUUM ANALYZE" >/dev/null
    done
    sql "$E2E_DB" -c "CHECKPOINT" >/dev/null
    while (( waited < 60 )) && (( $(psql -XAt "$E2E_DB" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'") > 0 )); do
        sleep 1; waited=$(( waited + 1 ))
    done
    progress "e2e: the other databases vacuumed; waited ${waited} s for autovacuum"
}

e2e_confine() {  # CPUS: serve's threads and every PostgreSQL process on these cores
    local pid
    taskset -a -p -c "$1" "${SERVE_PID[e2e]}" >/dev/null
    if [[ -n "${PGPID:-}" ]]; then
        for pid in "$PGPID" $(pgrep -P "$PGPID"); do taskset -p -c "$1" "$pid" >/dev/null 2>&1 || true; done
    fi
}

e2e_one_core() {
    local serve_core=$(( CLIENT_CPU == 0 ? 1 : 0 ))
    e2e_confine "$serve_core"
    e2e_step warmup "$E2E_LATENCY_RATE" "$(( WARMUP > 3 ? WARMUP : 3 ))" warm1 64
    e2e_step onecore "$E2E_LATENCY_RATE" "$E2E_SECONDS" one 64
    e2e_confine "0-$(( $(nproc) - 1 ))"
    progress "e2e latency at $E2E_LATENCY_RATE events/s, serve and PostgreSQL on core $serve_core alone: p50 $(e2e_field p50_ms) ms, p99 $(e2e_field p99_ms) ms"
    embedded || python3 Benchmarks/e2e/stage-latency.py "$OUT/e2e/one-pace.tsv" "$E2E_DB" $(e2e_logs) >"$OUT/e2e/onecore-stages.txt"
}

e2e_part() {
    mkdir -p "$OUT/e2e"
    : >"$OUT/e2e/figures.txt"
    command -v nginx >/dev/null || { echo "bench: nginx is missing (apt-get install nginx-light)" >&2; exit 1; }
    if embedded; then
        E2E_DB="sqlite:$(realpath "$OUT")/e2e/serve.sqlite" PGPID=""
        E2E_SKIP="$E2E_SKIP ceiling floor pipeline"
    else
        E2E_DB="$(database_url echorelay_e2e)" E2E_CEILING_DB="$(database_url echorelay_e2e_ceiling)"
        create_database echorelay_e2e "$ECHORELAY_BIN"
        create_database echorelay_e2e_ceiling "$ECHORELAY_BIN"
        # Its own database, so that its rows do not weigh on the ceiling taken after the steps.
        E2E_PIPELINE_DB="$(database_url echorelay_e2e_pipeline)"
        e2e_skips pipeline || create_database echorelay_e2e_pipeline "$ECHORELAY_BIN"
        DB="$E2E_DB" find_postmaster
    fi
    start_nginx
    ALLOWED_HOSTS="127.0.0.1:$PROVIDER_PORT"
    SERVE_EXTRA_ENV=(ECHORELAY_ECHO_ALLOW_HTTP=1 ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1)
    start_serve e2e "$ECHORELAY_BIN" "$E2E_DB" all
    SERVE_EXTRA_ENV=()
    e2e_record "world store=$E2E_STORE subscription_a=$(subscribe a) subscription_b=$(subscribe b) provider_port=$PROVIDER_PORT subscriber_port=$SUBSCRIBER_PORT"

    e2e_skips ceiling || e2e_ceiling before
    e2e_skips floor || e2e_floor
    e2e_skips pipeline || e2e_pipeline
    e2e_skips lone || e2e_lone
    embedded || e2e_settle
    # A warm-up at the latency step's rate, as each ingest point has: the first paced load after
    # the lone events meets tables PostgreSQL has not analysed since they held a few rows.
    e2e_step warmup "$E2E_LATENCY_RATE" "$(( WARMUP > 3 ? WARMUP : 3 ))" warm 64
    e2e_skips latency || { e2e_step latency "$E2E_LATENCY_RATE" "$E2E_SECONDS" lat 64
    progress "e2e latency at $E2E_LATENCY_RATE events/s: p50 $(e2e_field p50_ms) ms, p99 $(e2e_field p99_ms) ms (pacer late p99 $(e2e_field pacer_late_p99_ms) ms)"
    embedded || python3 Benchmarks/e2e/stage-latency.py "$OUT/e2e/lat-pace.tsv" "$E2E_DB" $(e2e_logs) >"$OUT/e2e/latency-stages.txt"; }
    e2e_skips onecore || e2e_one_core
    if [[ -n "$E2E_RATES" ]]; then
        e2e_fixed_steps
        return
    fi
    if e2e_skips steps; then
        e2e_skips ceiling || e2e_ceiling after
        stop_serve e2e
        stop_nginx "$OUT/e2e"
        python3 Benchmarks/e2e/report.py "$OUT" | tee "$OUT/e2e.md"
        return
    fi

    local rate="$E2E_START_RATE" best=0 failed=0 n=0
    while (( n < E2E_MAX_STEPS )); do
        n=$(( n + 1 ))
        e2e_step step "$rate" "$E2E_SECONDS" "s$n" 64
        progress "e2e step $n: $rate events/s offered, $(e2e_field completed_rate) completed/s, backlog $(e2e_field backlog_middle) → $(e2e_field backlog_end), sustained $(e2e_field sustained)$([[ "$(e2e_field pacer_late)" == yes ]] && echo ', PACER LATE')"
        if [[ "$(e2e_field sustained)" == yes ]]; then best="$rate"; else failed="$rate"; fi
        if (( failed == 0 )); then rate=$(( rate * 3 / 2 ));
        elif (( best > 0 && failed * 10 > best * 12 && rate == failed && n < E2E_MAX_STEPS )); then rate=$(( (best + failed) / 2 ));
        else break; fi
        (( rate != best && rate != failed )) || break
    done
    e2e_record "sustained rate=$best"
    if (( best > 0 )); then
        e2e_step overload $(( 2 * best )) "$E2E_OVERLOAD_SECONDS" ov 128
        progress "e2e overload at $(( 2 * best )) events/s: $(e2e_field acknowledged_rate) acknowledged/s, $(e2e_field completed_rate) completed/s, backlog max $(e2e_field backlog_max), 503s $(e2e_field status_503), lost $(e2e_field lost), drained in $(e2e_field drain_s) s"
    else
        progress "e2e: no step was sustained, so no overload step"
    fi
    e2e_skips ceiling || e2e_ceiling after
    stop_serve e2e
    stop_nginx "$OUT/e2e"
    python3 Benchmarks/e2e/report.py "$OUT" | tee "$OUT/e2e.md"
}
