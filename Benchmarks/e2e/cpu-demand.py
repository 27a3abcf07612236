#!/usr/bin/env python3
"""Samples, every 2 s, how much CPU each part of a bench run used and how long it waited for one.

    cpu-demand.py OUT [--interval 2]

Run it beside `scripts/bench` and stop it afterwards. Each line of OUT is a time, the machine's
idle milliseconds a second (both cores together, so 2000 is an idle machine), and for each thread
group `name=running/waiting`: milliseconds a second on a CPU and runnable but waiting for one,
from each thread's /proc/PID/task/TID/schedstat. serve's threads are listed by thread name
(`serve:NIO-SGLTN-1-#1` is its first event loop); every PostgreSQL process is `pg`, the pacer
`py` and nginx `nginx`. A thread whose running plus waiting is near 1000 is a serial bottleneck
even while the machine still shows idle time.
"""
import argparse
import os
import time


def group(comm, thread):
    if comm.startswith("echorelay"):
        return "serve:" + thread
    if comm == "postgres":
        return "pg"
    if comm.startswith("python"):
        return "py"
    if comm.startswith("nginx"):
        return "nginx"
    return None


def sample():
    """({(tid, group): (running ns, waiting ns)}, machine idle ticks)."""
    threads = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
            if group(comm, "") is None:
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                name = group(comm, open(f"/proc/{pid}/task/{tid}/comm").read().strip())
                running, waiting, _ = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()
                threads[(tid, name)] = (int(running), int(waiting))
        except OSError:
            continue  # the process ended between listing and reading
    cpu = open("/proc/stat").readline().split()
    return threads, int(cpu[4]) + int(cpu[5])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--interval", type=float, default=2)
    args = parser.parse_args()
    ticks = os.sysconf("SC_CLK_TCK")
    ns_per_ms_s = 1_000_000 * args.interval
    with open(args.out, "w") as out:
        before, idle_before = sample()
        while True:
            time.sleep(args.interval)
            now, idle = sample()
            totals = {}
            for key, (running, waiting) in now.items():
                if key in before:
                    total = totals.setdefault(key[1], [0, 0])
                    total[0] += running - before[key][0]
                    total[1] += waiting - before[key][1]
            idle_ms = (idle - idle_before) * 1000 / ticks / args.interval
            busiest = sorted(totals.items(), key=lambda item: -item[1][0])
            fields = " ".join(f"{name}={r / ns_per_ms_s:.0f}/{w / ns_per_ms_s:.0f}" for name, (r, w) in busiest if r > 0)
            out.write(f"{time.strftime('%H:%M:%S')} idle={idle_ms:.0f} {fields}\n")
            out.flush()
            before, idle_before = now, idle


if __name__ == "__main__":
    main()
