#!/usr/bin/env python3
"""Figures of one end-to-end step (scripts/bench-e2e.bash), from what the pacer sent and what
the subscribers logged. Nothing here reads EchoRelay: an event counts as completed when both
subscribers' logs have it.

    analyse.py wait     PACE_TSV LOG_A LOG_B --timeout T     wait until every acknowledged
                                                             event reached both subscribers
    analyse.py step     PACE_TSV LOG_A LOG_B --rate R --seconds S
    analyse.py overload PACE_TSV LOG_A LOG_B --seconds S --windows OUT_TSV [--window 5]

PACE_TSV is pace.py's output; the logs are nginx's (deliveries.py). Each prints one line of
`key=value` for the script, which appends it to its results. Definitions:

- acknowledged: answered 202 by EchoRelay; completed: in both subscribers' logs, at the later
  arrival; latency: from the pacer's intended send time to a subscriber's arrival time.
- backlog at time t: events sent by t (and acknowledged) less events completed by t.
- sustained (step): every request acknowledged; the backlog at the window's end at most one
  second of the offered rate and grown by at most a tenth of a second's over the window's
  second half (a pipeline that keeps pace holds its backlog steady, however long its latency);
  and everything completed afterwards. (The rule before allowed a quarter second's growth, so
  a step whose backlog grew steadily, p99 in seconds, counted.)
  `pacer_late` flags a step the pacer could not offer on time (its p99 lateness over 50 ms),
  whose rate is then not what was offered.
"""
import argparse
import bisect
import csv
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deliveries  # noqa: E402


def load_pace(path):
    with open(path) as f:
        return [{"id": r["event_id"], "intended": float(r["intended"]), "sent": float(r["sent"]),
                 "answered": float(r["answered"]), "status": int(r["status"]), "retry_after": r["retry_after"]}
                for r in csv.DictReader(f, delimiter="\t")]


def arrivals(path, ids):
    """First arrival per event of ids, with the log's duplicates and order violations (a user's
    sequence going back within one subscriber's log) among those events."""
    first, duplicates, violations, last_sequence = {}, 0, 0, {}
    for arrival, _, event_id, user_id, sequence in deliveries.read(path):
        if event_id not in ids:
            continue
        if event_id in first:
            duplicates += 1
            continue
        first[event_id] = arrival
        if sequence < last_sequence.get(user_id, 0):
            violations += 1
        last_sequence[user_id] = max(sequence, last_sequence.get(user_id, 0))
    return first, duplicates, violations


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def ms(value):
    return "" if value is None else f"{value * 1000:.1f}"


class Step:
    def __init__(self, pace_tsv, log_a, log_b):
        self.rows = load_pace(pace_tsv)
        acked = {r["id"] for r in self.rows if r["status"] == 202}
        self.a, dup_a, bad_a = arrivals(log_a, acked)
        self.b, dup_b, bad_b = arrivals(log_b, acked)
        self.duplicates, self.order_violations = dup_a + dup_b, bad_a + bad_b
        self.acked = [r for r in self.rows if r["status"] == 202]
        self.completed = {i: max(self.a[i], self.b[i]) for i in acked if i in self.a and i in self.b}
        # By send time: an answer can reach the pacer after the deliveries reach nginx.
        self.acked_times = sorted(r["sent"] for r in self.acked)
        self.answered_times = sorted(r["answered"] for r in self.acked)
        self.completed_times = sorted(self.completed.values())
        self.start = min(r["intended"] for r in self.rows)

    def backlog(self, t):
        return bisect.bisect_right(self.acked_times, t) - bisect.bisect_right(self.completed_times, t)

    def common(self):
        late = [r["sent"] - r["intended"] for r in self.rows if r["sent"]]
        each = [self.a[r["id"]] - r["intended"] for r in self.acked if r["id"] in self.a] + \
               [self.b[r["id"]] - r["intended"] for r in self.acked if r["id"] in self.b]
        both = [self.completed[r["id"]] - r["intended"] for r in self.acked if r["id"] in self.completed]
        refused = [r for r in self.rows if r["status"] != 202]
        return {
            "offered": len(self.rows), "acknowledged": len(self.acked), "completed": len(self.completed),
            "lost": len(self.acked) - len(self.completed),
            "status_503": sum(r["status"] == 503 for r in refused),
            "status_503_retry_after": sum(r["status"] == 503 and r["retry_after"] != "" for r in refused),
            "no_answer": sum(r["status"] == 0 for r in refused),
            "other_status": sum(r["status"] not in (0, 503) for r in refused),
            "pacer_late_p99_ms": ms(percentile(late, 99)),
            "p50_ms": ms(percentile(each, 50)), "p99_ms": ms(percentile(each, 99)), "max_ms": ms(max(each or [0])),
            "both_p50_ms": ms(percentile(both, 50)), "both_p99_ms": ms(percentile(both, 99)),
            "duplicates": self.duplicates, "order_violations": self.order_violations,
            "last_completion": f"{max(self.completed_times or [self.start]):.3f}",
        }


def wait(args):
    missing = {r["id"] for r in load_pace(args.pace) if r["status"] == 202}
    logs = [deliveries.LogFollower(args.log_a, from_start=True), deliveries.LogFollower(args.log_b, from_start=True)]
    deadline = time.time() + args.timeout
    while True:
        missing = {i for i in missing if not all(log.has(i) for log in logs)}
        if not missing or time.time() > deadline:
            print(f"wait drained={'no' if missing else 'yes'} missing={len(missing)}")
            return
        time.sleep(0.5)


def step_figures(args):
    step = Step(args.pace, args.log_a, args.log_b)
    end = step.start + args.seconds
    middle, at_end = step.backlog(step.start + args.seconds / 2), step.backlog(end)
    figures = step.common()
    in_window = bisect.bisect_right(step.completed_times, end)
    late = float(figures["pacer_late_p99_ms"] or 0)
    sustained = (len(step.acked) == len(step.rows) and figures["lost"] == 0
                 and at_end <= args.rate and at_end - middle <= args.rate / 10)
    figures.update({
        "rate": args.rate, "completed_rate": f"{in_window / args.seconds:.1f}",
        "backlog_middle": middle, "backlog_end": at_end,
        "drain_s": f"{max(0.0, max(step.completed_times or [end]) - end):.2f}",
        "sustained": "yes" if sustained else "no", "pacer_late": "yes" if late > 50 else "no",
    })
    print("step " + " ".join(f"{k}={v}" for k, v in figures.items()))


def overload(args):
    step = Step(args.pace, args.log_a, args.log_b)
    end = step.start + args.seconds
    last = max(step.completed_times + [r["answered"] for r in step.rows])
    with open(args.windows, "w") as out:
        out.write("from_s\tto_s\tacknowledged_per_s\tcompleted_per_s\tstatus_503\tbacklog_at_end\n")
        t = step.start
        while t < last:
            to = t + args.window
            acked = sum(t <= x < to for x in step.answered_times)
            done = sum(t <= x < to for x in step.completed_times)
            refused = sum(r["status"] == 503 and t <= r["answered"] < to for r in step.rows)
            out.write(f"{t - step.start:.0f}\t{to - step.start:.0f}\t{acked / args.window:.1f}\t"
                      f"{done / args.window:.1f}\t{refused}\t{step.backlog(to)}\n")
            t = to
    figures = step.common()
    during = [x for x in step.answered_times if x < end]
    samples = [step.backlog(step.start + s) for s in range(int(last - step.start) + 1)]
    figures.update({
        "rate": args.rate, "acknowledged_rate": f"{len(during) / args.seconds:.1f}",
        "completed_rate": f"{bisect.bisect_right(step.completed_times, end) / args.seconds:.1f}",
        "backlog_max": max(samples or [0]), "backlog_end": step.backlog(end),
        "drain_s": f"{max(0.0, max(step.completed_times or [end]) - end):.2f}",
    })
    print("overload " + " ".join(f"{k}={v}" for k, v in figures.items()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["wait", "step", "overload"])
    parser.add_argument("pace")
    parser.add_argument("log_a")
    parser.add_argument("log_b")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--rate", type=float)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--windows")
    parser.add_argument("--window", type=float, default=5)
    args = parser.parse_args()
    {"wait": wait, "step": step_figures, "overload": overload}[args.command](args)


if __name__ == "__main__":
    main()
