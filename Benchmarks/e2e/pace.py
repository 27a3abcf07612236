#!/usr/bin/env python3
"""Sends pre-signed ingest requests (Benchmarks/wrk/make-events.py) at a fixed rate, open loop.

    pace.py URL REQUESTS_FILE OUT_TSV --rate R --seconds S [--connections 64]
    pace.py URL REQUESTS_FILE OUT_TSV --one-by-one N --logs SUB_A.log,SUB_B.log

Open loop: request i is meant to leave at start + i/R whatever the server does, so a slow answer
does not slow the offered rate (wrk's closed loop would: it waits for each answer). The intended
time is recorded, and latency is measured from it, so time spent waiting for a free connection
counts. Requests go over up to CONNECTIONS keep-alive connections, one request in flight on
each; a connection the server closes is reopened. Pin this process to the client core (taskset)
and read its `late_p99_ms`: a pacer that cannot keep up sends late, and its figures say so.

--one-by-one N sends N requests one at a time, each after the previous event reached every
subscriber log given (nginx's, see Benchmarks/e2e/nginx.conf), so a lone event's cost can be
read from the database's counters around the run.

OUT_TSV gets one line per request: event id, intended, sent and answered time (Unix seconds),
HTTP status (0: no answer) and Retry-After. The last line of standard output is
`pace key=value …` for scripts/bench-e2e.bash.
"""
import argparse
import asyncio
import collections
import math
import os
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deliveries import LogFollower  # noqa: E402


def load_requests(path, host, count):
    """The first COUNT lines of the file as raw HTTP/1.1 requests, with their event ids."""
    ids, requests = [], []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if len(ids) == count:
                break
            webhook_id, timestamp, signature, body = line.rstrip("\n").split("\t", 3)
            payload = body.encode()
            requests.append(
                (f"POST /v1/events HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"webhook-id: {webhook_id}\r\nwebhook-timestamp: {timestamp}\r\nwebhook-signature: {signature}\r\n"
                 f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload)
            ids.append(webhook_id.removeprefix("msg_"))
    if len(ids) < count:
        sys.exit(f"pace.py: {path} holds {len(ids)} requests, {count} needed")
    return ids, requests


class Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, answers read by Content-Length."""

    def __init__(self, pacer):
        self.pacer, self.transport, self.buffer, self.current = pacer, None, b"", None

    def connection_made(self, transport):
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, index):
        self.current = index
        self.transport.write(self.pacer.requests[index])

    def data_received(self, data):
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
            length = int(fields.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            index, self.current = self.current, None
            if index is not None:
                self.pacer.answered(self, index, int(head[0].split()[1]), fields.get("retry-after", ""))

    def connection_lost(self, exc):
        self.pacer.lost(self)


class Pacer:
    def __init__(self, url, requests, connections):
        self.address = (url.hostname, url.port or 80)
        self.requests = requests
        self.limit = connections
        n = len(requests)
        self.intended, self.sent, self.done = [0.0] * n, [0.0] * n, [0.0] * n
        self.status, self.retry_after = [0] * n, [""] * n
        self.idle, self.waiting, self.open, self.outstanding = [], collections.deque(), 0, 0
        self.all_answered = None

    async def connect(self):
        self.open += 1
        try:
            _, connection = await asyncio.get_running_loop().create_connection(lambda: Connection(self), *self.address)
        except OSError:
            self.open -= 1
            raise
        self.idle.append(connection)
        self.dispatch()

    def dispatch(self):
        while self.waiting and self.idle:
            index = self.waiting.popleft()
            self.sent[index] = time.time()
            self.idle.pop().send(index)

    def answered(self, connection, index, status, retry_after):
        self.done[index], self.status[index], self.retry_after[index] = time.time(), status, retry_after
        self.finish_one()
        self.idle.append(connection)
        self.dispatch()

    def lost(self, connection):
        self.open -= 1
        if connection in self.idle:
            self.idle.remove(connection)
        if connection.current is not None:  # no answer: recorded as status 0
            self.done[connection.current] = time.time()
            self.finish_one()
        if self.open < self.limit:
            asyncio.get_running_loop().create_task(self.connect())

    def finish_one(self):
        self.outstanding -= 1
        if self.outstanding == 0 and self.all_answered is not None:
            self.all_answered.set()

    async def run(self, rate):
        """Offers every request at RATE per second from now; returns when all are answered."""
        for _ in range(self.limit):
            await self.connect()
        self.all_answered = asyncio.Event()
        n = len(self.requests)
        self.outstanding = n
        start = time.time() + 0.05
        queued = 0
        while queued < n:
            due = min(n, max(queued, math.floor((time.time() - start) * rate) + 1))
            for i in range(queued, due):
                self.intended[i] = start + i / rate
                self.waiting.append(i)
            queued = due
            self.dispatch()
            if queued < n:
                await asyncio.sleep(max(0.0, start + queued / rate - time.time()))
        try:
            await asyncio.wait_for(self.all_answered.wait(), timeout=120)
        except asyncio.TimeoutError:
            print(f"pace.py: {self.outstanding} requests unanswered after 120 s", file=sys.stderr)

    async def one_by_one(self, logs):
        """Each request after the previous event reached every log."""
        followers = [LogFollower(path) for path in logs]
        await self.connect()
        self.all_answered = asyncio.Event()
        for index, event_id in enumerate(self.ids):
            self.outstanding = 1
            self.all_answered.clear()
            self.intended[index] = time.time()
            self.waiting.append(index)
            self.dispatch()
            await asyncio.wait_for(self.all_answered.wait(), timeout=30)
            deadline = time.time() + 60
            while not all(f.has(event_id) for f in followers):
                if time.time() > deadline:
                    sys.exit(f"pace.py: event {event_id} did not reach every subscriber in 60 s")
                await asyncio.sleep(0.002)


def percentile(values, p):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("requests")
    parser.add_argument("out")
    parser.add_argument("--rate", type=float)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--one-by-one", type=int)
    parser.add_argument("--logs", default="")
    args = parser.parse_args()
    url = urllib.parse.urlsplit(args.url)
    count = args.one_by_one or int(args.rate * args.seconds)
    ids, requests = load_requests(args.requests, url.netloc, count)
    pacer = Pacer(url, requests, 1 if args.one_by_one else args.connections)
    pacer.ids = ids
    cpu = time.process_time()
    if args.one_by_one:
        asyncio.run(pacer.one_by_one(args.logs.split(",")))
    else:
        asyncio.run(pacer.run(args.rate))
    cpu = time.process_time() - cpu

    with open(args.out, "w") as out:
        out.write("event_id\tintended\tsent\tanswered\tstatus\tretry_after\n")
        for i, event_id in enumerate(ids):
            out.write(f"{event_id}\t{pacer.intended[i]:.6f}\t{pacer.sent[i]:.6f}\t{pacer.done[i]:.6f}\t"
                      f"{pacer.status[i]}\t{pacer.retry_after[i]}\n")
    late = [(pacer.sent[i] - pacer.intended[i]) * 1000 for i in range(count) if pacer.sent[i]]
    answer = [(pacer.done[i] - pacer.intended[i]) * 1000 for i in range(count) if pacer.done[i]]
    span = max(pacer.sent) - min(pacer.intended)
    statuses = {}
    for s in pacer.status:
        statuses[s] = statuses.get(s, 0) + 1
    print(f"pace requests={count} offered_rate={count / span if span > 0 else 0:.1f} "
          f"late_p50_ms={percentile(late, 50):.2f} late_p99_ms={percentile(late, 99):.2f} late_max_ms={max(late or [0]):.2f} "
          f"answer_p50_ms={percentile(answer, 50):.2f} answer_p99_ms={percentile(answer, 99):.2f} "
          f"accepted={statuses.get(202, 0)} status_503={statuses.get(503, 0)} no_answer={statuses.get(0, 0)} "
          f"other={count - statuses.get(202, 0) - statuses.get(503, 0) - statuses.get(0, 0)} client_cpu_s={cpu:.3f}")


if __name__ == "__main__":
    main()
