#!/usr/bin/env python3
"""Where an event's latency goes, stage by stage, for profiling the p99 target (not part of
scripts/bench's figures): reads the pacer's record (pace.py's TSV), the subscribers' logs and
the events, deliveries and attempts of the run's database, and prints p50 / p90 / p99 / max
in milliseconds of each stage of the measured events:

    intended → sent         the pacer's own lateness
    sent → received         the request until ingest's transaction began (events.received_at)
    received → acknowledged ingest's commit until the pacer read the 202
    received → decided      ingest, hand-off, the echo and the outcome's commit
    decided → attempt       until the first delivery's attempt started (delivery_attempts)
    attempt → arrival       the webhook until the subscriber logged it
    intended → arrival      the whole (the later of the two subscribers)

    stage-latency.py PACE_TSV DATABASE_URL SUBSCRIBER_LOG...

The database's clock and the pacer's are the same machine's, so stages across them compare.
"""
import subprocess
import sys

from deliveries import read


def percentiles(values):
    values = sorted(values)
    if not values:
        return "-"
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]
    return " / ".join(f"{v * 1000:7.1f}" for v in (pick(0.5), pick(0.9), pick(0.99), values[-1]))


def main():
    pace, url, logs = sys.argv[1], sys.argv[2], sys.argv[3:]
    paced = {}
    with open(pace, encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            event_id, intended, sent, answered, status, _ = line.rstrip("\n").split("\t")
            if status == "202":
                paced[event_id] = (float(intended), float(sent), float(answered))
    rows = subprocess.run(
        ["psql", "-XAt", "-F", "\t", url, "-c",
         "SELECT e.id, extract(epoch FROM e.received_at), extract(epoch FROM coalesce(e.decided_at, e.verified_at)),"
         " (SELECT extract(epoch FROM min(a.started_at)) FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id"
         "  WHERE d.event_id = e.id) FROM events e"],
        check=True, capture_output=True, text=True).stdout.splitlines()
    stored = {}
    for row in rows:
        event_id, received, decided, attempt = row.split("\t")
        stored[event_id] = (float(received), float(decided) if decided else None, float(attempt) if attempt else None)
    arrival = {}
    for log in logs:
        for at, _, event_id, _, _ in read(log):
            arrival[event_id] = max(arrival.get(event_id, 0), at)
    stages = {name: [] for name in ("intended → sent", "sent → received", "received → acknowledged",
                                     "received → decided", "decided → attempt", "attempt → arrival",
                                     "intended → arrival")}
    for event_id, (intended, sent, answered) in paced.items():
        if event_id not in stored or event_id not in arrival:
            continue
        received, decided, attempt = stored[event_id]
        stages["intended → sent"].append(sent - intended)
        stages["sent → received"].append(received - sent)
        stages["received → acknowledged"].append(answered - received)
        if decided is not None:
            stages["received → decided"].append(decided - received)
            if attempt is not None:
                stages["decided → attempt"].append(attempt - decided)
        if attempt is not None:
            stages["attempt → arrival"].append(arrival[event_id] - attempt)
        stages["intended → arrival"].append(arrival[event_id] - intended)
    print(f"{'stage':<26} {'p50 / p90 / p99 / max ms':>38}   events")
    for name, values in stages.items():
        print(f"{name:<26} {percentiles(values):>38}   {len(values)}")


if __name__ == "__main__":
    main()
