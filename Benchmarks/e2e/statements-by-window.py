#!/usr/bin/env python3
"""What each statement cost in each 5 s of an overload, from the running totals that
scripts/bench-e2e.bash samples while it is offered (ov-statements-by-5s.tsv):

    statements-by-window.py FILE

For the statements that took the most time in all, one line per window: calls, mean
execution ms and rows a call; then the delivery queue's index sizes (MB) at each sample, and
per window the WAL written, its full-page images, checkpoints started, vacuums seen, and the
machine's CPU busy, idle and stolen (in cores). A statement whose mean grows from window to
window is what an overload makes dearer as it goes.
"""
import sys
from collections import defaultdict

samples = defaultdict(dict)   # time -> {queryid: (calls, total_ms, rows)}
indexes = defaultdict(dict)   # time -> {index: bytes}
server = defaultdict(dict)    # time -> {"wal": (bytes, fpi), "checkpoints": n}
vacuums = defaultdict(set)    # time -> tables being vacuumed
cpu = defaultdict(dict)       # "cpu" (all) or "cpuN" -> time -> (busy, idle, stolen) jiffies
texts = {}
for line in open(sys.argv[1]):
    parts = line.rstrip("\n").split("\t")
    if len(parts) < 4:
        continue
    # One sample's rows share a time (now(), the statement's start); rounded, as older files
    # took each row's own clock.
    at, kind, key = round(float(parts[0])), parts[1], parts[2]
    if kind == "statement":
        samples[at][key] = (int(parts[3]), float(parts[4]), int(parts[5]))
        texts[key] = parts[6]
    elif kind == "index":
        indexes[at][key] = int(parts[3])
    elif kind == "wal":
        server[at]["wal"] = (int(parts[3]), int(parts[4]))
    elif kind == "checkpoints":
        server[at]["checkpoints"] = int(parts[3])
    elif kind == "vacuum":
        vacuums[at].add(key)
    elif kind == "cpu":
        cpu[key][float(parts[0])] = (int(parts[3]), int(parts[4]), int(parts[5]))

times = sorted(samples)
if len(times) < 2:
    sys.exit("fewer than two samples")
last = samples[times[-1]]
top = sorted(last, key=lambda q: -last[q][1])[:6]
for query in top:
    print(f"{texts[query]}")
    for before, after in zip(times, times[1:]):
        c0, t0, r0 = samples[before].get(query, (0, 0.0, 0))
        c1, t1, r1 = samples[after].get(query, (0, 0.0, 0))
        calls = c1 - c0
        if calls > 0:
            print(f"  +{after - times[0]:5.1f} s  {calls:6d} calls  {(t1 - t0) / calls:7.3f} ms  {(r1 - r0) / calls:6.1f} rows")
print("deliveries' indexes, MB, at each sample:")
names = sorted({name for sizes in indexes.values() for name in sizes})
for name in names:
    print(f"  {name:26}" + " ".join(f"{indexes[at].get(name, 0) / 1e6:5.1f}" for at in sorted(indexes)))
at_times = sorted(server)
if len(at_times) >= 2:
    print("server, per window:")
    for before, after in zip(at_times, at_times[1:]):
        (b0, f0), (b1, f1) = server[before].get("wal", (0, 0)), server[after].get("wal", (0, 0))
        started = server[after].get("checkpoints", 0) - server[before].get("checkpoints", 0)
        seen = ", ".join(sorted(vacuums.get(after, set()))) or "none"
        print(f"  +{after - at_times[0]:5.1f} s  WAL {(b1 - b0) / 1e6:6.1f} MB ({f1 - f0} full-page images)"
              f"  checkpoints started {started}  vacuuming at the sample: {seen}")
if cpu:
    print("the machine's CPU, per window, in cores (100 jiffies a second): busy / idle / stolen,"
          " in all then per core")
    cores = ["cpu"] + sorted((name for name in cpu if name != "cpu"), key=lambda name: int(name[3:]))
    times = sorted(cpu["cpu"])
    for before, after in zip(times, times[1:]):
        seconds = after - before
        cells = []
        for core in cores:
            if before not in cpu[core] or after not in cpu[core]:
                continue
            busy, idle, stolen = (cpu[core][after][i] - cpu[core][before][i] for i in range(3))
            cells.append(f"{core} {busy / 100 / seconds:4.2f}/{idle / 100 / seconds:4.2f}/{stolen / 100 / seconds:4.2f}")
        print(f"  +{after - times[0]:5.1f} s  " + "   ".join(cells))
