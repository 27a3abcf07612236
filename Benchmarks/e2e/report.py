#!/usr/bin/env python3
"""The markdown of scripts/bench's e2e part, from its results folder.

    report.py RESULTS_DIR

Reads e2e/figures.txt (one line per measurement: a kind, then key=value pairs; written by
scripts/bench-e2e.bash), e2e/overload-windows.tsv (analyse.py) and meta.env.
"""
import csv
import sys
from pathlib import Path

folder = Path(sys.argv[1])
meta = dict(line.split("=", 1) for line in (folder / "meta.env").read_text().splitlines() if "=" in line)
figures = []
for line in (folder / "e2e" / "figures.txt").read_text().splitlines():
    kind, *pairs = line.split()
    figures.append((kind, dict(p.split("=", 1) for p in pairs if "=" in p)))


def first(kind):
    return next((f for k, f in figures if k == kind), None)


def every(kind):
    return [f for k, f in figures if k == kind]


def num(f, key):
    try:
        return float(f[key])
    except (TypeError, KeyError, ValueError):
        return None


def fmt(value, digits=0, unit=""):
    return "–" if value is None else f"{value:,.{digits}f}{unit}"


def per(f, key, count_key, digits=2):
    a, b = num(f, key), num(f, count_key)
    return fmt(a / b, digits) if a is not None and b else "–"


def relay_bound(floor, pipeline, cores):
    """Events/s that the machine's cores allow when each event costs the HTTP floor's machine
    CPU plus the pipeline SQL's, and nothing of the relay's own: an upper bound."""
    if not (floor and pipeline and cores):
        return None
    a, b = num(floor, "machine_cpu_ms"), num(pipeline, "machine_cpu_ms")
    return cores * 1000 / (a + b) if a and b else None


store = (first("world") or {}).get("store", "postgres")
where = ("the embedded store (SQLite, WAL, synchronous=FULL, on disk)" if store == "embedded"
         else f"PostgreSQL {meta.get('postgres', '?')} (durable)")
out = [f"Date {meta.get('date', '?')}, commit {meta.get('commit', '?')}, {meta.get('machine', '?')}; "
       f"{where}. serve `--role all`, two ordered subscriptions "
       f"(token.rotated, phone.changed); nginx as provider and subscribers and the pacer pinned to core "
       f"{meta.get('client_cpu', '?')}.", ""]

lone, idle = first("lone"), first("idle")
ceilings = [num(f, "tps") for f in every("ceiling") if num(f, "tps")]
ceiling = sum(ceilings) / len(ceilings) if ceilings else None
sustained = num(first("sustained") or {}, "rate") or 0
steps = every("step")
best = next((s for s in steps if num(s, "rate") == sustained and s.get("sustained") == "yes"), None)
latency, onecore, overload = first("latency"), first("onecore"), first("overload")

rows = []
if lone:
    idle_rate = (num(idle, "xids") or 0) / (num(idle, "counted_s") or 1) if idle else 0
    less_idle = ((num(lone, "xids") or 0) - idle_rate * (num(lone, "counted_s") or 0)) / (num(lone, "events") or 1)
    rows.append(("write transactions per event, one at a time until both subscribers have it (commits)",
                 f"{per(lone, 'xids', 'events')} ({per(lone, 'commits', 'events')}); "
                 f"{less_idle:.2f} less idle serve's {idle_rate:.2f}/s", "≤ 3"))
    rows.append(("lone event, intended send → second subscriber, p50 / p99",
                 f"{lone.get('both_p50_ms', '–')} / {lone.get('both_p99_ms', '–')} ms", "—"))
if latency:
    rows.append((f"latency at {fmt(num(latency, 'rate'))} events/s open loop, intended send → subscriber, p50 / p99 "
                 f"(to the second subscriber)",
                 f"{latency.get('p50_ms')} / **{latency.get('p99_ms')} ms** ({latency.get('both_p50_ms')} / "
                 f"{latency.get('both_p99_ms')} ms)", "p99 ≤ 30 ms"))
if onecore:
    rows.append((f"the same with serve and PostgreSQL on one core (taskset), p50 / p99 (to the second subscriber)",
                 f"{onecore.get('p50_ms')} / **{onecore.get('p99_ms')} ms** ({onecore.get('both_p50_ms')} / "
                 f"{onecore.get('both_p99_ms')} ms)", "p99 ≤ 30 ms"))
if ceilings:
    rows.append(("light ingest ceiling, pgbench 32 clients (before / after the steps)",
                 " / ".join(fmt(c) for c in ceilings) + " tx/s", "—"))
floor = first("floor")
if floor:
    rate = num(floor, "rate")
    rows.append(("HTTP floor: an event's HTTP exchanges alone on serve's libraries, wrk 64 connections (÷ ceiling); "
                 "its CPU and nginx's per event",
                 f"{fmt(rate)} events/s ({rate / ceiling:.2f}×); {floor.get('floor_cpu_ms')} ms, {floor.get('nginx_cpu_ms')} ms"
                 if ceiling and rate else "–", "bounds the next row"))
pipeline = first("pipeline")
if pipeline:
    rows.append((f"the pipeline's SQL alone: pgbench `pipeline.sql`, {pipeline.get('batch')} events a transaction "
                 f"on {pipeline.get('clients')} clients (÷ ceiling)",
                 f"{fmt(num(pipeline, 'rate'))} events/s ({num(pipeline, 'rate') / ceiling:.2f}×)" if ceiling else "–",
                 "—"))
    bound = relay_bound(floor, pipeline, int((meta.get("machine") or "0").split()[0]))
    if bound:
        rows.append(("bound on any relay of these rows: cores ÷ (the floor's + the pipeline SQL's machine CPU "
                     f"per event, {floor.get('machine_cpu_ms')} + {pipeline.get('machine_cpu_ms')} ms) (÷ ceiling)",
                     f"{fmt(bound)} events/s ({bound / ceiling:.2f}×)" if ceiling else fmt(bound),
                     "bounds the next row"))
rows.append(("highest sustained rate (÷ ceiling)",
             f"**{fmt(sustained)} events/s** ({sustained / ceiling:.2f}×)" if ceiling else fmt(sustained),
             "≥ 0.3× (aim 0.5×)"))
if best:
    rows.append(("write transactions per completed event at that rate (commits)",
                 f"{per(best, 'xids', 'completed')} ({per(best, 'commits', 'completed')})", "≤ 1.5"))
if overload:
    windows = list(csv.DictReader(open(folder / "e2e" / "overload-windows.tsv"), delimiter="\t"))
    seconds = num(overload, "seconds") or 0
    during = [float(w["completed_per_s"]) for w in windows if float(w["to_s"]) <= seconds]
    low = min(during) if during else None
    rows.append((f"overload, {fmt(num(overload, 'rate'))} events/s offered for {fmt(seconds)} s: acknowledged/s",
                 fmt(num(overload, "acknowledged_rate")), "—"))
    rows.append(("the same: completed/s, lowest 5 s window ÷ sustained rate",
                 f"{fmt(low)} ({low / sustained:.2f}×)" if low is not None and sustained else "–", "≥ 0.9×"))
    rows.append(("backlog (acknowledged, not at both subscribers): highest / at the end of the offering",
                 f"{fmt(num(overload, 'backlog_max'))} / {fmt(num(overload, 'backlog_end'))}", "within the bound"))
    rows.append(("`503` answers (with `Retry-After`)",
                 f"{fmt(num(overload, 'status_503'))} ({fmt(num(overload, 'status_503_retry_after'))})", "past the bound"))
    rows.append(("acknowledged events lost after draining; drain time",
                 f"{fmt(num(overload, 'lost'))}; {fmt(num(overload, 'drain_s'), 1)} s", "0"))
    rows.append(("write transactions per completed event, overload and drain",
                 per(overload, "xids", "completed"), "—"))
peaks = [num(f, "peak_rss_mb") for _, f in figures if num(f, "peak_rss_mb")]
rows.append(("serve peak RSS (VmHWM)", fmt(max(peaks) if peaks else None, 0, " MB"), "≤ 150 MB"))
measured = [f for k, f in figures if k in ("lone", "latency", "step", "overload")]
rows.append(("order violations / duplicate deliveries, all steps",
             f"{sum(int(f.get('order_violations', 0)) for f in measured)} / "
             f"{sum(int(f.get('duplicates', 0)) for f in measured)}", "0 / —"))

out += ["| figure | value | goal |", "|---|---:|---:|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows] + [""]

out += ["Steps (each drained before the next):", "",
        "| offered/s | completed/s in window | backlog middle → end | p50 / p99 ms | late pacer p99 ms "
        "| write tx per event | serve CPU ms per event | serve context switches per event | sustained |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
for s in [latency] + steps if latency else steps:
    cpu = num(s, "serve_cpu_s")
    out.append(f"| {fmt(num(s, 'rate'))} | {s.get('completed_rate')} | {s.get('backlog_middle')} → {s.get('backlog_end')} "
               f"| {s.get('p50_ms')} / {s.get('p99_ms')} | {s.get('pacer_late_p99_ms')} | {per(s, 'xids', 'completed')} "
               f"| {fmt(cpu * 1000 / num(s, 'completed'), 2) if cpu is not None and num(s, 'completed') else '–'} "
               f"| {per(s, 'serve_switches', 'completed')} "
               f"| {s.get('sustained')}{' (pacer late)' if s.get('pacer_late') == 'yes' else ''} |")
out.append("")

if overload:
    out += ["Overload, per 5 s from the first intended send (the offering ends at "
            f"{fmt(num(overload, 'seconds'))} s):", "",
            "| from s | acknowledged/s | completed/s | `503`s | backlog at the end |", "|---:|---:|---:|---:|---:|"]
    out += [f"| {w['from_s']} | {w['acknowledged_per_s']} | {w['completed_per_s']} | {w['status_503']} | {w['backlog_at_end']} |"
            for w in windows]
    out.append("")

warnings = [f"{k} {f.get('code', '')}: the pacer sent late (p99 {f.get('pacer_late_p99_ms')} ms): its offered rate is not the rate"
            for k, f in figures if f.get("pacer_late") == "yes"]
warnings += [f"{k} {f.get('code', '')}: {f.get('missing')} acknowledged events never reached both subscribers"
             for k, f in figures if f.get("drained") == "no"]
warnings += [f"{k} {f.get('code', '')}: {f.get('no_answer')} requests unanswered, {f.get('other_status')} other statuses"
             for k, f in figures if k != "overload" and (int(f.get("no_answer", 0)) or int(f.get("other_status", 0)))]
out += [f"- warning: {w}" for w in warnings]
print("\n".join(out))
