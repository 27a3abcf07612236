"""The retention part's table (scripts/bench-retention.bash): bytes per event before and after
pruning, the receipt's size, and the latency at 200 events/s with the pruner off (A) and on (B).

    python3 Benchmarks/retention-report.py bench-results/
"""
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
bytes_rows, noise = {}, []
for line in (out / "retention" / "figures.txt").read_text().splitlines():
    parts = line.split()
    if parts[0] == "noise":
        noise.append(dict(p.split("=", 1) for p in parts[1:]))
    elif parts:
        keys = ["events", "pruned", "deliveries", "attempts", "events_bytes", "deliveries_bytes", "attempts_bytes",
                "receipt_row", "event_row"]
        bytes_rows[parts[0]] = dict(zip(keys, map(int, parts[1:])))


def per_event(row, key):
    return row[key] / max(row["events"], 1)


print("Retention: bytes per event, table plus indexes (live rows only: after VACUUM FULL), of the")
print("three tables that grow with events; and the latency at 200 events/s, ABAB, with the pruner")
print("off (A) and pruning every second with a retention of 1 s (B).\n")
print("| | events | of them receipts | deliveries | attempts | events B/event | deliveries B/event | attempts B/event | total B/event |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for when, label in (("kept", "before pruning"), ("pruned", "after `echorelay prune`")):
    row = bytes_rows.get(when)
    if not row:
        continue
    total = sum(per_event(row, k) for k in ("events_bytes", "deliveries_bytes", "attempts_bytes"))
    print(f"| {label} | {row['events']:,} | {row['pruned']:,} | {row['deliveries']:,} | {row['attempts']:,} | "
          f"{per_event(row, 'events_bytes'):.0f} | {per_event(row, 'deliveries_bytes'):.0f} | "
          f"{per_event(row, 'attempts_bytes'):.0f} | **{total:.0f}** |")
if "pruned" in bytes_rows:
    row = bytes_rows["pruned"]
    print(f"\nA receipt: its row is {row['receipt_row']} bytes (pg_column_size), "
          f"{per_event(row, 'events_bytes'):.0f} bytes with its share of the table and its indexes.")

if noise:
    print("\n| side | round | p50 ms | p99 ms | completed/s | serve CPU s | PostgreSQL CPU s | events pruned by the end |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in noise:
        print(f"| {n['side']} | {n['round']} | {n['p50_ms']} | {n['p99_ms']} | {n['completed_rate']} | {n['serve_cpu_s']} | "
              f"{n['pg_cpu_s']} | {n['pruned_events']} |")
    for side in "AB":
        p99 = [float(n["p99_ms"]) for n in noise if n["side"] == side]
        if p99:
            print(f"\n{side}: p99 mean {statistics.mean(p99):.1f} ms over {len(p99)} windows.", end="")
    print()
