#!/usr/bin/env python3
"""Writes the ingest benchmark's events (scripts/bench), before the point that uses them.

    make-events.py COUNT OUT_FILE --prefix PREFIX [--users 2000] [--provider URL] [--sqlite]

Every event has its own id (PREFIX_n: make PREFIX unique per run and point), one of USERS
users (numeric ids, as a provider's id_str), and is dated now. A quarter are `phone.changed`
with an E.164 `data.phone_number`, the rest `token.rotated` with `data: {}`.
`echo.authorization` is a real OAuth 1.0a (HMAC-SHA1) header for a GET of the service
provider, about 300 bytes, as an app sends it; the consumer key is
$ECHORELAY_BENCH_CONSUMER_KEY.

Default output, for Benchmarks/wrk/replay.lua: one signed request a line, `webhook-id <TAB>
webhook-timestamp <TAB> webhook-signature <TAB> body`, where the body is compact JSON (so it
holds no tab or newline) and the signature is Standard Webhooks' `v1,<base64 HMAC-SHA256(key,
"<webhook-id>.<timestamp>.<body>")>` under $ECHORELAY_BENCH_SECRET (`whsec_<base64 key>`).
The server refuses a timestamp more than 5 minutes from its clock, so replay the file soon.

With --sqlite: the same events as a script for the sqlite3 shell, one transaction per event
that writes the rows EchoRelay's embedded store writes for it (SQLiteEventStore.ingest): the
user's sequence, the event (its fingerprint the SHA-256 of the body) and its work item.
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import random
import time
import urllib.parse


def quote(text):
    """RFC 3986 percent-encoding, as OAuth 1.0a wants it."""
    return urllib.parse.quote(text, safe="-._~")


def oauth_header(url, consumer_key, consumer_secret, token, token_secret, nonce, timestamp):
    """The Authorization header of a GET of `url` signed with HMAC-SHA1 (RFC 5849). The
    parameters other than the signature are unreserved characters here, so they are used as
    they are (quoting each one would be most of this script's time)."""
    params = [
        ("oauth_consumer_key", consumer_key),
        ("oauth_nonce", nonce),
        ("oauth_signature_method", "HMAC-SHA1"),
        ("oauth_timestamp", timestamp),
        ("oauth_token", token),
        ("oauth_version", "1.0"),
    ]
    normalized = "&".join(f"{k}={v}" for k, v in params)
    base = f"GET&{quote(url)}&{quote(normalized)}"
    key = f"{quote(consumer_secret)}&{quote(token_secret)}".encode()
    signature = base64.b64encode(hmac.new(key, base.encode(), hashlib.sha1).digest()).decode()
    params.insert(2, ("oauth_signature", quote(signature)))
    return "OAuth " + ", ".join(f'{k}="{v}"' for k, v in params)


def sql_text(value):
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


def sqlite_transaction(event, body, now_us):
    """One event as SQLiteEventStore.ingest writes it, in one transaction. The sequence is
    read back from the row the upsert wrote, as its RETURNING hands it to the next insert."""
    user = sql_text(event["user_id"])
    event_id = sql_text(event["id"])
    return (
        "BEGIN IMMEDIATE;\n"
        f"INSERT INTO user_sequences (user_id, last_sequence) VALUES ({user}, 1) "
        "ON CONFLICT (user_id) DO UPDATE SET last_sequence = last_sequence + 1;\n"
        "INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint, "
        "pushed_phone_number, echo_service_provider, echo_authorization) VALUES "
        f"({event_id}, {user}, (SELECT last_sequence FROM user_sequences WHERE user_id = {user}), "
        f"{sql_text(event['type'])}, {now_us}, {now_us}, X'{hashlib.sha256(body.encode()).hexdigest()}', "
        f"{sql_text(event['data'].get('phone_number'))}, {sql_text(event['echo']['service_provider'])}, "
        f"{sql_text(event['echo']['authorization'])});\n"
        f"INSERT INTO work_items (kind, event_id, due_at, created_at) VALUES ('verify', {event_id}, {now_us}, {now_us});\n"
        "COMMIT;\n"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--provider", default="https://api.example.com/1.1/account/verify_credentials.json")
    parser.add_argument("--sqlite", action="store_true", help="write sqlite3 transactions, not signed requests")
    args = parser.parse_args()

    key = None
    if not args.sqlite:
        secret = os.environ["ECHORELAY_BENCH_SECRET"]
        assert secret.startswith("whsec_"), "ECHORELAY_BENCH_SECRET must be whsec_<base64 key>"
        key = base64.b64decode(secret[len("whsec_"):])
    consumer_key = os.environ.get("ECHORELAY_BENCH_CONSUMER_KEY", "echorelay-bench")
    assert quote(consumer_key) == consumer_key, "the consumer key must be unreserved characters"
    consumer_secret = "bench-consumer-secret-" + hashlib.sha256(consumer_key.encode()).hexdigest()[:16]

    now = time.time()
    timestamp = str(int(now))
    occurred_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    rng = random.Random(args.prefix)
    with open(args.out, "w", encoding="utf-8") as out:
        for n in range(args.count):
            user = rng.randrange(args.users)
            user_id = str(1_000_000_000 + user)
            token = f"{user_id}-{hashlib.sha1(f'token{user}'.encode()).hexdigest()}"
            token_secret = hashlib.sha1(f"token-secret{user}".encode()).hexdigest()
            if rng.randrange(4) == 0:
                kind, data = "phone.changed", {"phone_number": f"+1555{user:07d}"}
            else:
                kind, data = "token.rotated", {}
            event = {
                "id": f"{args.prefix}_{n}",
                "type": kind,
                "user_id": user_id,
                "occurred_at": occurred_at,
                "data": data,
                "echo": {
                    "service_provider": args.provider,
                    "authorization": oauth_header(args.provider, consumer_key, consumer_secret, token, token_secret,
                                                  nonce=f"{rng.getrandbits(128):032x}", timestamp=timestamp),
                },
            }
            body = json.dumps(event, separators=(",", ":"))
            if args.sqlite:
                out.write(sqlite_transaction(event, body, int(now * 1_000_000)))
                continue
            message_id = "msg_" + event["id"]
            mac = hmac.new(key, f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
            out.write(f"{message_id}\t{timestamp}\tv1,{base64.b64encode(mac).decode()}\t{body}\n")


if __name__ == "__main__":
    main()
