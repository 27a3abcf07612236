#!/usr/bin/env python3
"""A Shared Signals Framework (SSF 1.0) transmitter on loopback, for EchoRelay's tests of its receiver.

Usage: ssf_transmitter.py --token BEARER [--path TENANT] [--audience AUD] [--long-poll-wait SECONDS]

Prints the port it listens on (127.0.0.1), then serves, as the transmitter whose issuer is
http://127.0.0.1:PORT (or http://127.0.0.1:PORT/TENANT with --path):

  GET  /.well-known/ssf-configuration[/TENANT]  the transmitter configuration (SSF 1.0 §7.1)
  GET  /jwks                                    its published signing keys
  POST|GET|PATCH|PUT|DELETE /ssf/streams        stream management (SSF 1.0 §8.1.1)
  GET|POST /ssf/status                          a stream's status (SSF 1.0 §8.1.2)
  POST /ssf/verify                              asks for a verification event (SSF 1.0 §8.1.4)
  POST /ssf/poll/STREAM_ID                      poll delivery (RFC 8936) of a stream's SETs
  POST /poll                                    poll delivery of the default queue (no stream)

Every protocol endpoint but the configuration and the keys wants `Authorization: Bearer BEARER`.
SETs are compact JWS, RS256, `typ` secevent+jwt, signed with jwcrypto (code nobody here wrote).
Push streams (RFC 8935) get their SETs POSTed to the receiver's endpoint_url.

A JSON control API for the tests, under /control/ (no authorization):

  POST /control/sets          {"queue"?, "sets": [SPEC...]} -> {"jtis", "tokens"}: signs each and
                              enqueues it on `queue` (a stream id, or "default", the queue of
                              /poll); a push stream's SETs are pushed instead, before the answer
  POST /control/sign          {"queue"?, "sets": [SPEC...]} -> {"tokens"}: signs, enqueues nothing
      SPEC: {"jti"?, "event_type", "event"?, "sub_id"?, "kid"? (an existing key, published or
             not), "claims"? (extra or overriding top-level claims), "remove"? [claim names],
             "typ"? (null: no typ), "aud"?, "raw"? (this string is the SET, unsigned)}
  POST /control/keys          {"kid", "publish"? (true), "signing"? (false)} -> {"kid"}: a new
                              RSA 2048 key, or an existing one (un)published or made the signer
  POST /control/metadata      {"set"?: {field: value}, "remove"?: [field]}: edits the configuration
  POST /control/verification  {"state": "wrong" | "missing" | "as-asked"}: the next verification
                              event's state
  POST /control/outage        {"count", "status"?, "delay"?, "drop"?}: the next `count` poll
                              requests are held for `delay` seconds, then answered `status` (with
                              no body), or their connection is closed with no answer (`drop`)
  GET  /control/requests      every protocol request: method, path, headers, json (or null)
  GET  /control/acked         {jti: how many acks came for it}
  GET  /control/errors        {jti: {"err", "description"}} from polls' setErrs
  GET  /control/pending       {queue: [jti...]} not yet acknowledged, in delivery order
  GET  /control/streams       every stream's configuration, status, reason, authorization_header
  POST /control/echo-authorization {"on"}: stream configurations echo the receiver's
                              authorization_header back (some transmitters do)
  GET  /control/pushes        [{"url", "status", "body", "jti"}] every push attempted (status null:
                              no answer)
  GET  /control/jwks-fetches  {"count", "times"}: the JWKS requests served, in unix time
"""
import argparse
import copy
import json
import secrets
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from jwcrypto import jwk, jws
from jwcrypto.common import json_encode

PUSH = "urn:ietf:rfc:8935"
POLL = "urn:ietf:rfc:8936"
CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SSF = "https://schemas.openid.net/secevent/ssf/event-type/"
VERIFICATION = SSF + "verification"
EVENTS_SUPPORTED = [CAEP + name for name in (
    "session-revoked", "token-claims-change", "credential-change", "assurance-level-change",
    "device-compliance-change", "session-established", "session-presented", "risk-level-change",
)] + [RISC + name for name in (
    "account-credential-change-required", "account-purged", "account-disabled", "account-enabled",
    "identifier-changed", "identifier-recycled", "credential-compromise", "opt-in", "opt-out-initiated",
    "opt-out-cancelled", "opt-out-effective", "recovery-activated", "recovery-information-changed",
    "sessions-revoked",
)] + [SSF + "verification", SSF + "stream-updated"]
STATUSES = ("enabled", "paused", "disabled")

# Pushes go straight to the receiver on loopback, whatever proxy the environment names.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Refused(Exception):
    """A request answered with an error: its status and an RFC 8935-style {"err", "description"}."""

    def __init__(self, status, description, err="invalid_request"):
        super().__init__(description)
        self.status, self.err, self.description = status, err, description


def need(condition, description):
    if not condition:
        raise Refused(400, description)


def new_key(kid):
    return jwk.JWK.generate(kty="RSA", size=2048, kid=kid, use="sig", alg="RS256")


class State:
    def __init__(self, token, tenant, audience, long_poll_wait):
        self.lock = threading.Lock()
        self.enqueued = threading.Condition(self.lock)  # notified whenever a SET is enqueued
        self.token = token
        self.tenant = tenant
        self.audience = audience                # --audience, or None
        self.long_poll_wait = long_poll_wait
        self.keys = {"rsa-1": new_key("rsa-1")}  # kid -> private JWK
        self.published = ["rsa-1"]              # the kids in the JWKS, in order
        self.signing_kid = "rsa-1"
        self.streams = {}                       # stream id -> receiver fields, aud, status, reason
        self.queues = {"default": {}}           # queue -> {jti: token}, pending, in enqueue order
        self.acked = {}                         # jti -> acks received
        self.errors = {}                        # jti -> {"err", "description"}
        self.requests = []
        self.pushes = []
        self.jwks_fetches = []
        self.verification = "as-asked"          # how the next verification event carries its state
        self.echo_authorization = False          # whether stream configurations echo authorization_header
        self.outage = {"count": 0, "status": None, "delay": 0, "drop": False}
        self.host = self.issuer = self.well_known_path = None
        self.metadata = {}

    def listening(self, port):
        """Names everything after the port, known once the server is bound."""
        self.host = "http://127.0.0.1:%d" % port
        self.issuer = self.host + ("/" + self.tenant if self.tenant else "")
        self.well_known_path = "/.well-known/ssf-configuration" + ("/" + self.tenant if self.tenant else "")
        self.metadata = {
            "spec_version": "1_0", "issuer": self.issuer, "jwks_uri": self.host + "/jwks",
            "delivery_methods_supported": [PUSH, POLL],
            "configuration_endpoint": self.host + "/ssf/streams", "status_endpoint": self.host + "/ssf/status",
            "verification_endpoint": self.host + "/ssf/verify",
            "authorization_schemes": [{"spec_urn": "urn:ietf:rfc:6749"}], "default_subjects": "ALL",
        }

    def authorized(self, header):
        scheme, _, credential = (header or "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(credential.strip().encode(), self.token.encode())

    # --- SETs (callers hold the lock) ---

    def sign(self, claims, kid=None, typ="secevent+jwt"):
        key = self.keys[kid or self.signing_kid]
        header = {"alg": "RS256", "typ": typ, "kid": key.get("kid")}
        if typ is None:
            del header["typ"]
        token = jws.JWS(json.dumps(claims).encode())
        token.add_signature(key, alg="RS256", protected=json_encode(header))
        return token.serialize(compact=True)

    def make_set(self, spec, aud):
        """(jti, token) for a control SPEC: `aud` unless it names its own."""
        need(isinstance(spec, dict), "each SET is a JSON object")
        jti = spec.get("jti") or secrets.token_urlsafe(12)
        if spec.get("raw") is not None:
            return jti, str(spec["raw"])
        need(isinstance(spec.get("event_type"), str), "a SET needs an event_type")
        claims = {"iss": self.issuer, "aud": spec.get("aud", aud), "iat": int(time.time()), "jti": jti,
                  "events": {spec["event_type"]: spec.get("event") or {}}}
        if spec.get("sub_id") is not None:
            claims["sub_id"] = spec["sub_id"]
        claims.update(spec.get("claims") or {})
        for name in spec.get("remove") or []:
            claims.pop(name, None)
        kid = spec.get("kid") or self.signing_kid
        need(kid in self.keys, "no key has the kid %r (make it with /control/keys)" % kid)
        return jti, self.sign(claims, kid, spec.get("typ", "secevent+jwt"))

    def enqueue(self, queue, jti, token):
        pending = self.queues.setdefault(queue, {})
        pending.pop(jti, None)  # enqueued again: delivered after the others
        pending[jti] = token
        self.enqueued.notify_all()

    def queue_audience(self, queue):
        stream = self.streams.get(queue)
        return stream["aud"] if stream else (self.audience or "echorelay")

    # --- streams (callers hold the lock) ---

    def receiver_fields(self, body, base=None):
        """The receiver-supplied fields of a stream: `base` (PATCH) or the defaults (POST, PUT), changed by `body`."""
        fields = dict(base) if base else {"method": POLL, "endpoint_url": None, "authorization_header": None,
                                          "events_requested": [], "description": None}
        if "events_requested" in body:
            requested = body["events_requested"]
            need(isinstance(requested, list) and all(isinstance(e, str) for e in requested),
                 "events_requested is an array of event type URIs")
            fields["events_requested"] = requested
        if "description" in body:
            need(body["description"] is None or isinstance(body["description"], str), "description is a string")
            fields["description"] = body["description"]
        if body.get("delivery") is not None:
            delivery = body["delivery"]
            need(isinstance(delivery, dict), "delivery is an object")
            method = delivery.get("method", fields["method"])
            need(method in (PUSH, POLL), "delivery.method is %s (push) or %s (poll)" % (PUSH, POLL))
            if method != fields["method"]:
                fields["endpoint_url"] = fields["authorization_header"] = None
            fields["method"] = method
            if method == PUSH:  # a poll stream's endpoint_url is the transmitter's, whatever the receiver says
                for name in ("endpoint_url", "authorization_header"):
                    if name in delivery:
                        need(delivery[name] is None or isinstance(delivery[name], str), "delivery.%s is a string" % name)
                        fields[name] = delivery[name]
        if fields["method"] == PUSH:
            need(bool(fields["endpoint_url"]), "a push stream needs the receiver's delivery.endpoint_url")
        return fields

    def config(self, stream_id):
        stream = self.streams[stream_id]
        url = self.host + "/ssf/poll/" + stream_id if stream["method"] == POLL else stream["endpoint_url"]
        config = {
            "stream_id": stream_id, "iss": self.issuer, "aud": stream["aud"],
            "delivery": dict({"method": stream["method"], "endpoint_url": url},
                             **({"authorization_header": stream["authorization_header"]} if self.echo_authorization else {})),
            "events_supported": EVENTS_SUPPORTED, "events_requested": stream["events_requested"],
            "events_delivered": [e for e in stream["events_requested"] if e in EVENTS_SUPPORTED],
        }
        if stream["description"] is not None:
            config["description"] = stream["description"]
        config["min_verification_interval"] = 0
        return config

    def status(self, stream_id):
        stream = self.streams[stream_id]
        answer = {"stream_id": stream_id, "status": stream["status"]}
        if stream["reason"] is not None:
            answer["reason"] = stream["reason"]
        return answer

    def known_stream(self, stream_id):
        need(isinstance(stream_id, str), "stream_id is required")
        if stream_id not in self.streams:
            raise Refused(404, "no stream %r" % stream_id, err="not_found")
        return stream_id

    # --- delivery ---

    def push(self, url, authorization, jti, token):
        """POSTs one SET to a push stream's receiver (RFC 8935) and logs its answer. Lock not held."""
        headers = {"Content-Type": "application/secevent+jwt", "Accept": "application/json"}
        if authorization:
            headers["Authorization"] = authorization
        request = urllib.request.Request(url, data=token.encode(), headers=headers, method="POST")
        try:
            with OPENER.open(request, timeout=10) as response:
                status, body = response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as error:
            status, body = None, str(error)
        with self.lock:
            self.pushes.append({"url": url, "status": status, "body": body, "jti": jti})

    def send_verification(self, stream_id, state, mode):
        """The verification event a POST /ssf/verify asked for, delivered just after its 204."""
        time.sleep(0.05)
        with self.lock:
            stream = self.streams.get(stream_id)
            if stream is None:
                return
            event = {}
            if mode == "wrong":
                event["state"] = "not-" + state if state is not None else "unasked-state"
            elif mode == "as-asked" and state is not None:
                event["state"] = state
            jti = secrets.token_urlsafe(12)
            token = self.sign({"iss": self.issuer, "aud": stream["aud"], "iat": int(time.time()), "jti": jti,
                               "events": {VERIFICATION: event}, "sub_id": {"format": "opaque", "id": stream_id}})
            if stream["method"] == POLL:
                return self.enqueue(stream_id, jti, token)
            url, authorization = stream["endpoint_url"], stream["authorization_header"]
        self.push(url, authorization, jti, token)

    def poll(self, queue, body):
        """RFC 8936 §2.4: acks and errors first, then the pending SETs, waiting for some when asked to."""
        body = {} if body is None else body
        need(isinstance(body, dict), "the body is a JSON object")
        max_events = body.get("maxEvents", 10)
        need(isinstance(max_events, int) and not isinstance(max_events, bool) and max_events >= 0,
             "maxEvents is a non-negative integer")
        return_immediately = body.get("returnImmediately", False)
        need(isinstance(return_immediately, bool), "returnImmediately is a boolean")
        acks = body.get("ack", [])
        need(isinstance(acks, list) and all(isinstance(j, str) for j in acks), "ack is an array of jti strings")
        set_errs = body.get("setErrs", {})
        need(isinstance(set_errs, dict), "setErrs is an object of jti to {err, description}")
        for jti, error in set_errs.items():
            need(isinstance(error, dict) and isinstance(error.get("err"), str)
                 and isinstance(error.get("description", ""), str),
                 "setErrs[%r] is an object with an err string and a description string" % jti)
        with self.lock:
            if queue not in self.queues:
                raise Refused(404, "no stream %r" % queue, err="not_found")
            pending = self.queues[queue]
            for jti in acks:
                self.acked[jti] = self.acked.get(jti, 0) + 1
                pending.pop(jti, None)
            for jti, error in set_errs.items():
                self.errors[jti] = {"err": error["err"], "description": error.get("description", "")}
                pending.pop(jti, None)
            if max_events == 0:
                return {"sets": {}, "moreAvailable": bool(pending)}
            if not pending and not return_immediately:
                self.enqueued.wait_for(lambda: self.queues.get(queue), timeout=self.long_poll_wait)
                pending = self.queues.get(queue, {})
            chosen = list(pending.items())[:max_events]
            return {"sets": dict(chosen), "moreAvailable": len(pending) > len(chosen)}


def make_handler(state):

    # --- protocol endpoints: (status, JSON value or None) ---

    def well_known(query, body):
        return 200, state.metadata

    def jwks(query, body):
        state.jwks_fetches.append(time.time())
        return 200, {"keys": [state.keys[kid].export_public(as_dict=True) for kid in state.published]}

    def query_stream(query):
        return state.known_stream((query.get("stream_id") or [None])[0])

    def create_stream(query, body):
        need(isinstance(body, dict), "the body is a JSON object")
        stream_id = secrets.token_hex(12)
        fields = state.receiver_fields(body)
        aud = state.audience or body.get("aud") or "echorelay"
        state.streams[stream_id] = dict(fields, aud=aud, status="enabled", reason=None)
        state.queues[stream_id] = {}
        return 201, state.config(stream_id)

    def read_streams(query, body):
        if "stream_id" in query:
            return 200, state.config(query_stream(query))
        return 200, [state.config(stream_id) for stream_id in state.streams]

    def change_stream(replace):
        def change(query, body):
            need(isinstance(body, dict), "the body is a JSON object")
            stream_id = state.known_stream(body.get("stream_id"))
            stream = state.streams[stream_id]
            stream.update(state.receiver_fields(body, None if replace else stream))
            return 200, state.config(stream_id)
        return change

    def delete_stream(query, body):
        stream_id = query_stream(query)
        del state.streams[stream_id]
        state.queues.pop(stream_id, None)
        return 204, None

    def read_status(query, body):
        return 200, state.status(query_stream(query))

    def update_status(query, body):
        need(isinstance(body, dict), "the body is a JSON object")
        stream_id = state.known_stream(body.get("stream_id"))
        need(body.get("status") in STATUSES, "status is one of " + ", ".join(STATUSES))
        need(body.get("reason") is None or isinstance(body["reason"], str), "reason is a string")
        state.streams[stream_id].update(status=body["status"], reason=body.get("reason"))
        return 200, state.status(stream_id)

    def verify(query, body):
        need(isinstance(body, dict), "the body is a JSON object")
        stream_id = state.known_stream(body.get("stream_id"))
        need(body.get("state") is None or isinstance(body["state"], str), "state is a string")
        mode, state.verification = state.verification, "as-asked"
        threading.Thread(target=state.send_verification, args=(stream_id, body.get("state"), mode), daemon=True).start()
        return 204, None

    # (method, path) -> (handler, wants the bearer token, runs under the lock)
    routes = {
        ("POST", "/ssf/streams"): (create_stream, True, True),
        ("GET", "/ssf/streams"): (read_streams, True, True),
        ("PATCH", "/ssf/streams"): (change_stream(False), True, True),
        ("PUT", "/ssf/streams"): (change_stream(True), True, True),
        ("DELETE", "/ssf/streams"): (delete_stream, True, True),
        ("GET", "/ssf/status"): (read_status, True, True),
        ("POST", "/ssf/status"): (update_status, True, True),
        ("POST", "/ssf/verify"): (verify, True, True),
        ("GET", "/jwks"): (jwks, False, True),
        ("POST", "/poll"): (lambda query, body: (200, state.poll("default", body)), True, False),
    }

    def route(method, path):
        if method == "GET" and path == state.well_known_path:
            return well_known, False, True
        if method == "POST" and path.startswith("/ssf/poll/") and len(path) > len("/ssf/poll/"):
            queue = path[len("/ssf/poll/"):]
            return (lambda query, body: (200, state.poll(queue, body))), True, False
        return routes.get((method, path))

    # --- control API ---

    def control(method, path, request):
        if method == "GET":
            if path == "/control/requests":
                return state.requests
            if path == "/control/acked":
                return state.acked
            if path == "/control/errors":
                return state.errors
            if path == "/control/pending":
                return {queue: list(pending) for queue, pending in state.queues.items()}
            if path == "/control/streams":
                return [dict(state.config(stream_id), status=stream["status"], reason=stream["reason"],
                             authorization_header=stream["authorization_header"])
                        for stream_id, stream in state.streams.items()]
            if path == "/control/pushes":
                return state.pushes
            if path == "/control/jwks-fetches":
                return {"count": len(state.jwks_fetches), "times": state.jwks_fetches}
            raise Refused(404, "no such control", err="not_found")
        need(isinstance(request, dict), "the body is a JSON object")
        if path in ("/control/sets", "/control/sign"):
            queue = request.get("queue") or "default"
            need(isinstance(queue, str), "queue is a stream id or \"default\"")
            need(isinstance(request.get("sets"), list), "sets is an array of SET specs")
            made = [state.make_set(spec, state.queue_audience(queue)) for spec in request["sets"]]
            answer = {"tokens": [token for _, token in made]}
            if path == "/control/sets":
                answer["jtis"] = [jti for jti, _ in made]
                stream = state.streams.get(queue)
                if stream is not None and stream["method"] == PUSH:
                    return answer, [(stream["endpoint_url"], stream["authorization_header"], jti, token)
                                    for jti, token in made]
                for jti, token in made:
                    state.enqueue(queue, jti, token)
            return answer
        if path == "/control/metadata":
            state.metadata.update(request.get("set") or {})
            for field in request.get("remove") or []:
                state.metadata.pop(field, None)
            return {}
        if path == "/control/echo-authorization":
            state.echo_authorization = bool(request.get("on", True))
            return {}
        if path == "/control/verification":
            need(request.get("state") in ("wrong", "missing", "as-asked"), "state is wrong, missing or as-asked")
            state.verification = request["state"]
            return {}
        if path == "/control/outage":
            state.outage = {"count": int(request["count"]), "status": request.get("status"),
                            "delay": float(request.get("delay", 0)), "drop": bool(request.get("drop", False))}
            return {}
        raise Refused(404, "no such control", err="not_found")

    def add_key(request):
        """POST /control/keys: the key is made outside the lock (it takes a moment)."""
        need(isinstance(request, dict) and isinstance(request.get("kid"), str), "kid is required")
        kid = request["kid"]
        with state.lock:
            exists = kid in state.keys
        key = None if exists else new_key(kid)
        with state.lock:
            if key is not None:
                state.keys.setdefault(kid, key)
            if request.get("publish", True):
                if kid not in state.published:
                    state.published.append(kid)
            elif kid in state.published:
                state.published.remove(kid)
            if request.get("signing", False):
                state.signing_kid = kid
        return {"kid": kid}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):
            pass

        def body(self):
            """The parsed JSON body; None when there is none, `Refused` (a marker no endpoint accepts) when it is not JSON."""
            length = int(self.headers.get("Content-Length") or 0)
            text = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            if not text:
                return None
            try:
                return json.loads(text)
            except ValueError:
                return Refused

        def answer(self, status, headers, value):
            data = b"" if value is None else json.dumps(value).encode("utf-8")
            self.send_response(status)
            for name, header in (headers or {}).items():
                self.send_header(name, header)
            if value is not None:
                self.send_header("Content-Type", "application/json")
            if status != 204:  # RFC 9110 §8.6: no Content-Length on a 204
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def refusal(self, refused):
            self.answer(refused.status, {}, {"err": refused.err, "description": refused.description})

        def control(self, method):
            request = self.body()
            path = urlsplit(self.path).path
            try:
                if path == "/control/keys" and method == "POST":
                    return self.answer(200, {}, add_key(request))
                with state.lock:  # copied under the lock: other threads change the state while it is sent
                    value = copy.deepcopy(control(method, path, request))
                if isinstance(value, tuple):  # SETs for a push stream: pushed before the answer
                    value, pushes = value
                    for push in pushes:
                        state.push(*push)
                self.answer(200, {}, value)
            except Refused as refused:
                self.refusal(refused)
            except (KeyError, TypeError, ValueError) as error:  # a control body missing a field, or of the wrong type
                self.refusal(Refused(400, "%s: %s" % (type(error).__name__, error)))

        def protocol(self, method):
            body = self.body()
            parts = urlsplit(self.path)
            path, query = parts.path, parse_qs(parts.query)
            with state.lock:
                state.requests.append({"method": method, "path": self.path, "headers": dict(self.headers.items()),
                                       "json": None if body is Refused else body})
                outage = dict(state.outage)
                polling = path == "/poll" or path.startswith("/ssf/poll/")
                if polling and state.outage["count"] > 0:
                    state.outage["count"] -= 1
            if polling and outage["count"] > 0:
                if outage["delay"]:
                    time.sleep(outage["delay"])
                if outage["drop"]:
                    self.close_connection = True
                    return
                if outage["status"]:
                    return self.answer(int(outage["status"]), {}, None)
            found = route(method, path)
            if found is None:
                return self.refusal(Refused(404, "no such endpoint", err="not_found"))
            handler, wants_token, locked = found
            if wants_token and not state.authorized(self.headers.get("Authorization")):
                return self.answer(401, {"WWW-Authenticate": "Bearer"}, None)
            try:
                if locked:
                    with state.lock:
                        status, value = handler(query, body)
                        value = copy.deepcopy(value)
                else:
                    status, value = handler(query, body)
            except Refused as refused:
                return self.refusal(refused)
            self.answer(status, {}, value)

        def do_GET(self):
            if self.path.startswith("/control/"):
                return self.control("GET")
            self.protocol("GET")

        def do_POST(self):
            if self.path.startswith("/control/"):
                return self.control("POST")
            self.protocol("POST")

        def do_PATCH(self):
            self.protocol("PATCH")

        def do_PUT(self):
            self.protocol("PUT")

        def do_DELETE(self):
            self.protocol("DELETE")

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # not socketserver's 5: a burst of long polls would wait a SYN retry (1 s)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", required=True, help="the bearer token a receiver must present")
    parser.add_argument("--path", help="a tenant: the issuer is http://127.0.0.1:PORT/TENANT")
    parser.add_argument("--audience", help="the aud of every stream and SET (default: a stream's requested aud, or echorelay)")
    parser.add_argument("--long-poll-wait", type=float, default=2, help="how long a poll waits for a SET, in seconds")
    arguments = parser.parse_args()
    state = State(arguments.token, (arguments.path or "").strip("/") or None, arguments.audience, arguments.long_poll_wait)
    server = Server(("127.0.0.1", 0), make_handler(state))
    state.listening(server.server_address[1])
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
