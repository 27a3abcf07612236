#!/usr/bin/env bash
# serve's CPU per event by stage, for profiling (not part of scripts/bench's figures): one
# release serve on a durable PostgreSQL, nginx as provider and subscribers (nginx.conf), and
# the pacer at RATE events/s for SECS seconds after a 3 s warm-up; with subscribers, where each
# event's latency went, stage by stage (stage-latency.py). Compare stages by running
# it with SUBS=0 ROLE=ingest (ingest alone), SUBS=0 ROLE=all (ingest and verification) and
# SUBS=2 ROLE=all (the whole pipeline, as the e2e part). Prints serve's CPU and context
# switches per event and the top statements. DRAIN=1 also times the drain after an
# overload; PERF=1 records serve with perf to PERF_OUT (default /tmp/stages-perf.data);
# EXTRA_ENV passes settings to serve; SETUP_SQL runs after the migration (an experiment on the
# schema, such as an index dropped). Run it inside a private server:
#
#     ECHORELAY_PG_DURABLE=1 RATE=400 SUBS=2 scripts/with-postgres Benchmarks/e2e/stages.bash
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${ECHORELAY_BIN:-$PWD/.build/release/echorelay}
EXTRA_ENV=${EXTRA_ENV:-}
RATE=${RATE:-100}; SECS=${SECS:-10}; SUBS=${SUBS:-2}; ROLE=${ROLE:-all}
BASE="$ECHORELAY_TEST_DATABASE_URL"
DBURL=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/echorelay_stages")))' "$BASE")
psql -Xq "$BASE" -c "DROP DATABASE IF EXISTS echorelay_stages" -c "CREATE DATABASE echorelay_stages"
ECHORELAY_DATABASE_URL="$DBURL" $BIN migrate --log-level error >/dev/null
psql -Xq "$DBURL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
[[ -z "${SETUP_SQL:-}" ]] || psql -Xq -v ON_ERROR_STOP=1 "$DBURL" -c "$SETUP_SQL"
W=$(mktemp -d); mkdir -p $W/tmp
fp() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PP=$(fp); SP=$(fp); PORT=$(fp)
sed -e "s#@DIR@#$W#g; s#@PROVIDER_PORT@#$PP#g" -e "s#@SUBSCRIBER_PORT@#$SP#g; s#@SINK_PORT@#$(fp)#g" Benchmarks/e2e/nginx.conf >$W/nginx.conf
: >$W/subscriber-a.log; : >$W/subscriber-b.log
taskset -c 1 nginx -p $W -c $W/nginx.conf -e $W/err.log -g 'daemon off;' </dev/null >$W/nginx.out 2>&1 &
NG=$!
SECRET="whsec_$(head -c 24 /dev/urandom | base64)"; ADMIN="adm-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export ECHORELAY_BENCH_SECRET="$SECRET" ECHORELAY_BENCH_CONSUMER_KEY=echorelay-bench
env $(env | awk -F= '/^ECHORELAY_/ {print "-u " $1}') ECHORELAY_DATABASE_URL="$DBURL" ECHORELAY_ROLE=$ROLE ECHORELAY_INGEST_SECRETS="$SECRET" \
  ECHORELAY_ADMIN_TOKEN="$ADMIN" ECHORELAY_CONSUMER_KEY=echorelay-bench ECHORELAY_ECHO_ALLOWED_HOSTS="127.0.0.1:$PP" \
  ECHORELAY_HOST=127.0.0.1 ECHORELAY_PORT=$PORT ECHORELAY_LOG_LEVEL=info ECHORELAY_ECHO_ALLOW_HTTP=1 ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1 $EXTRA_ENV $BIN serve </dev/null >$W/serve.log 2>&1 &
SV=$!
trap 'kill $SV 2>/dev/null; kill -QUIT $NG 2>/dev/null; sleep 1; rm -rf $W' EXIT
until curl -fsS -o /dev/null http://127.0.0.1:$PORT/readyz 2>/dev/null; do sleep 0.2; done
for n in $(seq 1 $SUBS); do
  name=$( [[ $n == 1 ]] && echo a || echo b )
  curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"url\":\"http://127.0.0.1:$SP/hooks/$name\",\"event_types\":[\"token.rotated\",\"phone.changed\"],\"ordered\":true}" \
    http://127.0.0.1:$PORT/v1/subscriptions >/dev/null
done
ticks() { local l; read -r l </proc/$1/stat; local -a f; read -r -a f <<<"${l##*) }"; echo $(( f[11] + f[12] )); }
sw() { cat /proc/$1/task/*/status | awk '/ctxt_switches/ {n+=$2} END {print n}'; }
N=$((RATE*SECS))
python3 Benchmarks/wrk/make-events.py $((N+RATE*3)) $W/ev.req --prefix "x$RANDOM" --provider "http://127.0.0.1:$PP/1.1/account/verify_credentials.json" >/dev/null
python3 Benchmarks/wrk/make-events.py $((RATE*3)) $W/warm.req --prefix "w$RANDOM" --provider "http://127.0.0.1:$PP/1.1/account/verify_credentials.json" >/dev/null
taskset -c 1 python3 Benchmarks/e2e/pace.py http://127.0.0.1:$PORT $W/warm.req $W/warm.tsv --rate $RATE --seconds 3 --connections 16 >/dev/null
sleep 3
psql -Xq "$DBURL" -c "SELECT pg_stat_statements_reset()" >/dev/null
t0=$(ticks $SV); s0=$(sw $SV); a0=$EPOCHREALTIME
[[ -n "${PERF:-}" ]] && { perf record -g -F 999 -o ${PERF_OUT:-/tmp/stages-perf.data} -p $SV >/dev/null 2>&1 & PP2=$!; }
taskset -c 1 python3 Benchmarks/e2e/pace.py http://127.0.0.1:$PORT $W/ev.req $W/pace.tsv --rate $RATE --seconds $SECS --connections 16 | tail -1
if [[ -n "${DRAIN:-}" ]]; then
  want=$(( (N + RATE*3) * SUBS )); d0=$EPOCHREALTIME
  while (( $(cat $W/subscriber-a.log $W/subscriber-b.log | wc -l) < want )); do
    sleep 1; python3 -c "import sys; sys.exit(0 if $EPOCHREALTIME - $d0 < 300 else 1)" || break
    echo "drain t=$(python3 -c "print(round($EPOCHREALTIME - $d0))") delivered=$(cat $W/subscriber-a.log $W/subscriber-b.log | wc -l)/$want"
  done
  echo "drained in $(python3 -c "print(round($EPOCHREALTIME - $d0, 1))") s"
fi
sleep 3
[[ -n "${PERF:-}" ]] && { kill -INT $PP2; wait $PP2 || true; }
t1=$(ticks $SV); s1=$(sw $SV); a1=$EPOCHREALTIME
python3 -c "n=$N; print(f'RATE=$RATE SUBS=$SUBS ROLE=$ROLE serve cpu ms/event={($t1-$t0)/100*1000/n:.3f} switches/event={($s1-$s0)/n:.1f} window={$a1-$a0:.1f}s')"
echo "delivered: $(wc -l <$W/subscriber-a.log) $(wc -l <$W/subscriber-b.log)"
(( SUBS == 0 )) || python3 Benchmarks/e2e/stage-latency.py $W/pace.tsv "$DBURL" $W/subscriber-a.log $( (( SUBS > 1 )) && echo $W/subscriber-b.log)
psql -XAt -F $'\t' "$DBURL" -c "SELECT calls, rows, round(total_exec_time::numeric,1), round((total_exec_time / nullif(calls, 0))::numeric, 3), left(regexp_replace(query,'\s+',' ','g'),90) FROM pg_stat_statements ORDER BY calls DESC LIMIT 12"
