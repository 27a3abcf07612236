#!/usr/bin/env python3
"""The markdown tables of scripts/bench's ingest parts, from its results folder.

    ingest-report.py RESULTS_DIR

Reads points.tsv (one line per measured point), statements-r*.tsv (pg_stat_statements after
each EchoRelay point at 32 connections) and meta.env. Every figure is the median over the
rounds; a ratio is the median of the ratios of each round, whose points ran minutes apart.
"""
import csv
import statistics
import sys
from pathlib import Path

folder = Path(sys.argv[1])
meta = dict(line.split("=", 1) for line in (folder / "meta.env").read_text().splitlines() if "=" in line)
points = list(csv.DictReader(open(folder / "points.tsv"), delimiter="\t"))
warnings = []


def number(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def value(point, key):
    text = point.get(key, "")
    return float(text) if text not in ("", None) else None


def per_event(point, key, scale=1.0):
    """A counter of the point divided by its accepted events (or pgbench's transactions)."""
    total, events = value(point, key), value(point, "events")
    if total is None or not events:
        return None
    return total / events * scale


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def select(part, side):
    chosen = [p for p in points if p["part"] == part and p["side"] == side]
    for p in chosen:
        if p["ran_out"] == "true":
            warnings.append(f"{part} round {p['round']} {side}: wrk ran out of pre-signed requests, so its rate is too low")
        if (value(p, "non2xx") or 0) > 0 or (value(p, "socket_errors") or 0) > 0:
            warnings.append(f"{part} round {p['round']} {side}: {p['non2xx']} non-2xx answers, {p['socket_errors']} socket errors")
    return chosen


def by_round(chosen):
    return {p["round"]: p for p in chosen}


def ratios(numerator, denominator):
    """Per round: numerator's rate ÷ denominator's, for the rounds both have."""
    a, b = by_round(numerator), by_round(denominator)
    return [float(a[r]["rate"]) / float(b[r]["rate"]) for r in sorted(a) if r in b and float(b[r]["rate"]) > 0]


def ratio_text(values):
    if not values:
        return "–"
    return f"**{median(values):.2f}×** ({', '.join(f'{v:.2f}' for v in values)})"


out = []
rounds = meta.get("rounds", "?")
out.append(f"Date {meta.get('date', '?')}, commit {meta.get('commit', '?')}, {meta.get('machine', '?')}; "
           f"PostgreSQL {meta.get('postgres', '?')} (durable), SQLite {meta.get('sqlite', '?')}. "
           f"{meta.get('seconds', '?')} s per point after {meta.get('warmup', '?')} s of warm-up, {rounds} rounds; "
           f"load generators pinned to core {meta.get('client_cpu', '?')}; serve logs at `{meta.get('log_level', '?')}`. "
           f"Figures are medians over the rounds; ratios are the median of each round's ratio (each round's in brackets).")
out.append("")

# --- 32 connections ------------------------------------------------------------------------
echorelay, light, own = select("ingest", "echorelay"), select("ingest", "light"), select("ingest", "own")
if echorelay or light or own:
    connections = meta.get("connections", "32")
    out.append(f"### Ingest at {connections} connections: EchoRelay beside pgbench's ceilings, ABAB")
    out.append("")
    out.append("| figure | EchoRelay (`wrk`) | light ceiling (`pgbench`) | own ceiling (`pgbench`) | target |")
    out.append("| --- | ---: | ---: | ---: | --- |")

    def row(name, function, digits, target=""):
        cells = [median([function(p) for p in side]) for side in (echorelay, light, own)]
        out.append(f"| {name} | " + " | ".join(number(c, digits) for c in cells) + f" | {target} |")

    row("events/s (EchoRelay: rows stored ÷ window; pgbench: tps)", lambda p: value(p, "rate"), 0)
    out.append(f"| EchoRelay ÷ ceiling | | {ratio_text(ratios(echorelay, light))} | {ratio_text(ratios(echorelay, own))} "
               f"| ≥ 0.8× light, ≥ 1.0× own |")
    row("serve CPU, ms per event", lambda p: per_event(p, "serve_cpu_s", 1000), 3, "≤ 0.15")
    row("PostgreSQL CPU (postmaster and all its children), ms per event", lambda p: per_event(p, "pg_cpu_s", 1000), 3)
    row("load generator CPU, ms per event", lambda p: per_event(p, "client_cpu_s", 1000), 3)
    row("serve + PostgreSQL CPU, ms per event",
        lambda p: None if value(p, "pg_cpu_s") is None else ((value(p, "serve_cpu_s") or 0) + value(p, "pg_cpu_s")) / value(p, "events") * 1000, 3)
    row("write transactions per event (transaction ids assigned)", lambda p: per_event(p, "xids"), 2, "≤ 0.5")
    row("commits per event (`pg_stat_database.xact_commit`)", lambda p: per_event(p, "commits"), 2)
    row("WAL flushes (fsyncs) per event (`pg_stat_wal.wal_sync`)", lambda p: per_event(p, "wal_syncs"), 2)
    row("WAL bytes per event", lambda p: per_event(p, "wal_bytes"), 0)
    row("WAL full-page images per event", lambda p: per_event(p, "wal_fpi"), 2)
    row("sessions opened during the point (each commits twice as it starts)", lambda p: value(p, "sessions"), 0)
    row("other programs on the machine meanwhile, cores (of 2)", lambda p: value(p, "others_cores"), 2)
    sums = [sum((value(p, "non2xx") or 0) + (value(p, "socket_errors") or 0) for p in side) for side in (echorelay, light, own)]
    out.append("| non-2xx answers and socket errors (pgbench: failed transactions), all rounds | "
               + " | ".join(number(s) for s in sums) + " | 0 |")
    out.append("")
    out.append("| round | light tx/s | own tx/s | EchoRelay events/s | ÷ light | ÷ own |")
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
    l, o = by_round(light), by_round(own)
    for p in echorelay:
        r = p["round"]
        lr = float(l[r]["rate"]) if r in l else None
        orate = float(o[r]["rate"]) if r in o else None
        e = float(p["rate"])
        out.append(f"| {r} | {number(lr)} | {number(orate)} | {number(e)} | "
                   f"{f'{e / lr:.2f}×' if lr else '–'} | {f'{e / orate:.2f}×' if orate else '–'} |")
    out.append("")

    BENCH_OWN = ("pg_stat_statements", "pg_snapshot_xmax(pg_current_snapshot())")

    def read_statements(pattern):
        """pg_stat_statements saved after each point of a side, summed by statement."""
        statements = {}
        for file in sorted(folder.glob(pattern)):
            for line in file.read_text().splitlines():
                fields = line.split("\t")
                if len(fields) < 7:
                    continue
                queryid, calls, plan, execute, rows, wal, text = fields[:7]
                if int(calls) == 0 or any(mark in text for mark in BENCH_OWN):
                    continue  # never executed (planned only), or one of the bench's own readings
                # One statement can have several entries: EchoRelay's ingest has two, as its
                # phone number is bound as a text or as a NULL of another type. They are added up.
                s = statements.setdefault(text, {"calls": 0, "plan": 0.0, "exec": 0.0, "rows": 0, "wal": 0,
                                                 "text": text, "entries": set()})
                s["entries"].add(queryid)
                s["calls"] += int(calls)
                s["plan"] += float(plan)
                s["exec"] += float(execute)
                s["rows"] += int(rows)
                s["wal"] += int(wal)
        return sorted(statements.values(), key=lambda s: -(s["plan"] + s["exec"]))

    def statement_row(s, total, label=""):
        text = s["text"].replace("|", "\\|")
        text = text if len(text) <= 110 else text[:107] + "…"
        if len(s["entries"]) > 1:
            text = f"({len(s['entries'])} entries) {text}"
        share = f"{(s['plan'] + s['exec']) / total:.0%}" if total else "–"
        return (f"| {s['calls']:,} | {s['plan'] / s['calls']:.3f} | {s['exec'] / s['calls']:.3f} | "
                f"{s['rows'] / s['calls']:.2f} | {s['wal'] / s['calls']:,.0f} | "
                f"{share} | {label}`{text}` |")

    statements = read_statements("statements-r*.tsv")
    if statements:
        total = sum(s["plan"] + s["exec"] for s in statements)
        out.append("`pg_stat_statements` (with `track_planning`) during the EchoRelay points at "
                   f"{connections} connections, summed over the rounds, dearest first:")
        out.append("")
        out.append("| calls | mean plan ms | mean exec ms | rows per call | WAL bytes per call | share of plan + exec time | statement |")
        out.append("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        out.extend(statement_row(s, total) for s in statements[:5])
        own_statements = read_statements("statements-own-r*.tsv")
        if own_statements:
            out.append(statement_row(own_statements[0], None, "pgbench's own ceiling, the same statement prepared: "))
        out.append("")
        if any(len(s["entries"]) > 1 for s in statements):
            out.append("A statement with several entries is one text that pg_stat_statements keeps apart by its "
                       "parameters' types (EchoRelay binds the phone number as text, or as a NULL of unspecified type); "
                       "they are added up. The bench's own readings are left out.")
            out.append("")

# --- one connection --------------------------------------------------------------------------
one, baseline = select("one", "echorelay"), select("one", "baseline")
if one:
    out.append("### One connection (`wrk -c1 --latency`, serve --role ingest)")
    out.append("")
    out.append("| binary | events/s | p50 ms | p99 ms | serve CPU ms per event | PostgreSQL CPU ms per event | write transactions per event | other programs, cores |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, chosen in (("measured (`ECHORELAY_BIN`)", one), ("baseline (`ECHORELAY_BENCH_BASELINE`)", baseline)):
        if not chosen:
            continue
        out.append(f"| {name} | {number(median([value(p, 'rate') for p in chosen]))} | "
                   f"{number(median([value(p, 'p50_ms') for p in chosen]), 3)} | "
                   f"{number(median([value(p, 'p99_ms') for p in chosen]), 3)} | "
                   f"{number(median([per_event(p, 'serve_cpu_s', 1000) for p in chosen]), 3)} | "
                   f"{number(median([per_event(p, 'pg_cpu_s', 1000) for p in chosen]), 3)} | "
                   f"{number(median([per_event(p, 'xids') for p in chosen]), 2)} | "
                   f"{number(median([value(p, 'others_cores') for p in chosen]), 2)} |")
    if baseline:
        a, b = by_round(one), by_round(baseline)
        p50 = [float(a[r]["p50_ms"]) / float(b[r]["p50_ms"]) for r in sorted(a) if r in b]
        out.append("")
        out.append(f"p50 measured ÷ baseline, per round: {ratio_text(p50)} (target: ≤ 1.0×, no worse than before); "
                   f"rate measured ÷ baseline: {ratio_text(ratios(one, baseline))}.")
    out.append("")

# --- embedded ---------------------------------------------------------------------------------
embedded, loop = select("embedded", "echorelay"), select("embedded", "sqlite3")
if embedded or loop:
    out.append(f"### Embedded store (SQLite, WAL, synchronous=FULL)")
    out.append("")
    out.append("| side | events/s | CPU ms per event | other programs, cores | note |")
    out.append("| --- | ---: | ---: | ---: | --- |")
    out.append(f"| EchoRelay, `serve` on `sqlite:` (role all), wrk at {meta.get('connections', '32')} connections | "
               f"{number(median([value(p, 'rate') for p in embedded]))} | "
               f"{number(median([per_event(p, 'serve_cpu_s', 1000) for p in embedded]), 3)} (serve) | "
               f"{number(median([value(p, 'others_cores') for p in embedded]), 2)} | "
               "verification refuses each event at once (its provider is not an allowed host), in the same file |")
    out.append(f"| `sqlite3` shell, one transaction per event (the same three rows) | "
               f"{number(median([value(p, 'rate') for p in loop]))} | "
               f"{number(median([per_event(p, 'client_cpu_s', 1000) for p in loop]), 3)} (sqlite3) | "
               f"{number(median([value(p, 'others_cores') for p in loop]), 2)} | "
               "the same pragmas as `SQLiteEventStore.configure` |")
    out.append("")
    out.append(f"EchoRelay ÷ sqlite3, per round: {ratio_text(ratios(embedded, loop))} (target ≥ 0.8×).")
    out.append("")

if warnings:
    out.append("**Warnings:** " + "; ".join(warnings) + ".")
    out.append("")


def summary():
    """One table of the headline figures and their targets, put before the details."""
    rows = []

    def add(name, text, target=""):
        rows.append(f"| {name} | {text} | {target} |")

    if echorelay or light or own:
        add(f"EchoRelay at {meta.get('connections', '32')} connections, events/s", number(median([value(p, "rate") for p in echorelay])))
        add("light ceiling, tx/s", number(median([value(p, "rate") for p in light])))
        add("own ceiling, tx/s", number(median([value(p, "rate") for p in own])))
        add("EchoRelay ÷ light ceiling (median of per-round ratios)", ratio_text(ratios(echorelay, light)), "≥ 0.8×")
        add("EchoRelay ÷ own ceiling (median of per-round ratios)", ratio_text(ratios(echorelay, own)), "≥ 1.0×")
        add("serve CPU, ms per event", number(median([per_event(p, "serve_cpu_s", 1000) for p in echorelay]), 3), "≤ 0.15")
        add("PostgreSQL CPU, ms per event", number(median([per_event(p, "pg_cpu_s", 1000) for p in echorelay]), 3))
        add("client (wrk) CPU, ms per event", number(median([per_event(p, "client_cpu_s", 1000) for p in echorelay]), 3))
        add("write transactions per event", number(median([per_event(p, "xids") for p in echorelay]), 2), "≤ 0.5")
        add("commits per event", number(median([per_event(p, "commits") for p in echorelay]), 2))
    for name, chosen in (("one connection", one), ("one connection, baseline", baseline)):
        if chosen:
            add(f"{name}: p50 / p99, ms", f"{number(median([value(p, 'p50_ms') for p in chosen]), 3)} / "
                f"{number(median([value(p, 'p99_ms') for p in chosen]), 3)}",
                "p50 no worse than before" if name == "one connection" else "")
    if baseline:
        a, b = by_round(one), by_round(baseline)
        add("one connection: p50 ÷ baseline's (median of per-round ratios)",
            ratio_text([float(a[r]["p50_ms"]) / float(b[r]["p50_ms"]) for r in sorted(a) if r in b]), "≤ 1.0×")
    if embedded or loop:
        add("embedded: serve events/s / sqlite3 events/s",
            f"{number(median([value(p, 'rate') for p in embedded]))} / {number(median([value(p, 'rate') for p in loop]))}")
        add("embedded ÷ sqlite3 (median of per-round ratios)", ratio_text(ratios(embedded, loop)), "≥ 0.8×")
    if echorelay:
        top = read_statements("statements-r*.tsv")
        if top:
            t = top[0]
            add("top statement in pg_stat_statements (EchoRelay, 32 connections)",
                f"{t['calls']:,} calls, plan {t['plan'] / t['calls']:.3f} ms, exec {t['exec'] / t['calls']:.3f} ms, "
                f"{t['rows'] / t['calls']:.2f} rows per call: `{t['text'][:60]}…`")
    return ["### Summary", "", "| figure | value | target |", "| --- | ---: | --- |"] + rows + [""]


out[2:2] = summary()
print("\n".join(out))
