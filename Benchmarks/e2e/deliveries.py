"""The subscribers' delivery logs (nginx, Benchmarks/e2e/nginx.conf), read by pace.py and
report.py.

Each line is `$msec <TAB> $http_webhook_id <TAB> $request_body`, the body escaped by nginx's
`escape=json`: the arrival time (Unix seconds, to the millisecond), the delivery's webhook-id
and its JSON body, whose `event_id`, `user_id` and `sequence` say what it delivered.
"""
import json


def parse(line):
    """(arrival, webhook_id, event_id, user_id, sequence) of one log line, or None."""
    parts = line.rstrip("\n").split("\t", 2)
    if len(parts) != 3 or not parts[2]:
        return None
    body = json.loads(json.loads('"' + parts[2] + '"'))
    return float(parts[0]), parts[1], body["event_id"], body["user_id"], body["sequence"]


def read(path):
    with open(path, encoding="utf-8") as lines:
        return [d for d in map(parse, lines) if d]


class LogFollower:
    """The event ids seen in a log that is still being written, read as it grows."""

    def __init__(self, path, from_start=False):
        self.file = open(path, encoding="utf-8")
        if not from_start:
            self.file.seek(0, 2)
        self.partial = ""
        self.seen = set()

    def has(self, event_id):
        if event_id not in self.seen:
            text = self.partial + self.file.read()
            lines = text.split("\n")
            self.partial = lines.pop()
            for line in lines:
                delivery = parse(line)
                if delivery:
                    self.seen.add(delivery[2])
        return event_id in self.seen
