#!/usr/bin/env python3
"""An OAuth 2 authorization server on loopback, for EchoRelay's tests to re-verify against.

Usage: oauth2_server.py --client ID:SECRET [--client ID:SECRET ...] [--issuer URL]

Prints the port it listens on (127.0.0.1), then serves:

  POST /introspect   token introspection (RFC 7662), by oauthlib's IntrospectEndpoint
  GET  /userinfo     OpenID Connect UserInfo, by oauthlib's UserInfoEndpoint

The protocol handling is oauthlib's; this file holds only the request validator (the
server's data: its clients, tokens and accounts) and a small JSON control API for the
tests, under /control/:

  POST /control/tokens    {"user", "client_id", "expires_in"?, "expires_in_from_first_use"?,
                          "issuer"?, "scopes"?} -> {"access_token"}: a new token for that user
                          and client. With expires_in_from_first_use its life starts when it
                          is first introspected or used (its exp is fixed then), so a test
                          knows it was live when first looked at, on a machine of any speed
  POST /control/revoke    {"access_token"}: the token is dead from now on
  POST /control/accounts  {"user", "phone_number"?, "phone_number_verified"?}
  POST /control/outage    {"count", "status"?, "delay"?, "drop"?}: the next `count`
                          protocol requests are held for `delay` seconds, then answered
                          `status` (with no body), or their connection is closed with no
                          answer (`drop`)
  GET  /control/requests  every protocol request received: method, path, headers, form
"""
import argparse
import base64
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote_plus

from oauthlib.oauth2.rfc6749.endpoints.introspect import IntrospectEndpoint
from oauthlib.openid import RequestValidator
from oauthlib.openid.connect.core.endpoints.userinfo import UserInfoEndpoint


class State:
    def __init__(self, clients, issuer):
        self.lock = threading.Lock()
        self.clients = clients          # client id -> secret
        self.issuer = issuer
        self.tokens = {}                # token -> dict(user, client_id, exp, lifetime, iss, scopes, revoked)
        self.accounts = {}              # user -> dict(phone_number, phone_number_verified)
        self.outage = {"count": 0, "status": None, "delay": 0, "drop": False}
        self.requests = []

    def live_token(self, token):
        with self.lock:
            record = self.tokens.get(token)
            if record is not None and record["exp"] is None:
                record["exp"] = time.time() + record["lifetime"]
            if record is None or record["revoked"] or record["exp"] <= time.time():
                return None
            return dict(record)


class Validator(RequestValidator):
    """The server's data, as oauthlib asks for it."""

    def __init__(self, state):
        self.state = state

    def client_authentication_required(self, request, *args, **kwargs):
        return True

    def authenticate_client(self, request, *args, **kwargs):
        # client_secret_basic (RFC 6749 §2.3.1): each part form-encoded, then base64.
        header = request.headers.get("Authorization", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            client_id, _, secret = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
        except ValueError:
            return False
        client_id, secret = unquote_plus(client_id), unquote_plus(secret)
        expected = self.state.clients.get(client_id)
        if expected is None or not secrets.compare_digest(expected, secret):
            return False
        request.client_id = client_id
        return True

    def introspect_token(self, token, token_type_hint, request, *args, **kwargs):
        record = self.state.live_token(token)
        if record is None:
            return None
        return {
            "sub": record["user"], "client_id": record["client_id"], "iss": record["iss"], "exp": int(record["exp"]),
            "scope": " ".join(record["scopes"]), "token_type": "Bearer",
        }

    def validate_bearer_token(self, token, scopes, request):
        record = self.state.live_token(token)
        if record is None:
            return False
        request.scopes = record["scopes"]
        request.user = record["user"]
        return True

    def get_userinfo_claims(self, request):
        with self.state.lock:
            account = dict(self.state.accounts.get(request.user, {}))
        claims = {"sub": request.user}
        if account.get("phone_number") is not None:
            claims["phone_number"] = account["phone_number"]
            claims["phone_number_verified"] = bool(account.get("phone_number_verified", True))
        return claims


def make_handler(state):
    validator = Validator(state)
    introspect = IntrospectEndpoint(validator)
    userinfo = UserInfoEndpoint(validator)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):
            pass

        def body(self):
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length).decode("utf-8") if length else ""

        def answer(self, status, headers, body):
            data = body.encode("utf-8") if isinstance(body, str) else (body or b"")
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def control(self, method):
            body = self.body()
            request = json.loads(body) if body else {}
            with state.lock:
                if method == "GET" and self.path == "/control/requests":
                    return 200, state.requests
                if method != "POST":
                    return 405, {"error": "method"}
                if self.path == "/control/tokens":
                    token = secrets.token_urlsafe(32)
                    from_first_use = request.get("expires_in_from_first_use")
                    state.tokens[token] = {
                        "user": request["user"], "client_id": request["client_id"],
                        "exp": None if from_first_use is not None else time.time() + float(request.get("expires_in", 3600)),
                        "lifetime": float(from_first_use) if from_first_use is not None else None,
                        "iss": request.get("issuer", state.issuer), "scopes": request.get("scopes", ["openid", "phone"]),
                        "revoked": False,
                    }
                    return 200, {"access_token": token}
                if self.path == "/control/revoke":
                    state.tokens[request["access_token"]]["revoked"] = True
                    return 200, {}
                if self.path == "/control/accounts":
                    state.accounts[request["user"]] = {
                        "phone_number": request.get("phone_number"),
                        "phone_number_verified": request.get("phone_number_verified", True),
                    }
                    return 200, {}
                if self.path == "/control/outage":
                    state.outage = {"count": int(request["count"]), "status": request.get("status"),
                                    "delay": float(request.get("delay", 0)), "drop": bool(request.get("drop", False))}
                    return 200, {}
            return 404, {"error": "no such control"}

        def protocol(self, method):
            body = self.body()
            with state.lock:
                state.requests.append({
                    "method": method, "path": self.path, "headers": dict(self.headers.items()),
                    "form": dict(parse_qsl(body, keep_blank_values=True)) if body else {},
                })
                outage = dict(state.outage)
                if state.outage["count"] > 0:
                    state.outage["count"] -= 1
            if outage["count"] > 0:
                if outage["delay"]:
                    time.sleep(outage["delay"])
                if outage["drop"]:
                    self.close_connection = True
                    return
                if outage["status"]:
                    return self.answer(int(outage["status"]), {"Content-Type": "application/json"}, "")
            uri = "http://127.0.0.1" + self.path
            headers = dict(self.headers.items())
            if self.path.split("?")[0] == "/introspect":
                headers, text, status = introspect.create_introspect_response(uri, method, body, headers)
            elif self.path.split("?")[0] == "/userinfo":
                try:
                    headers, text, status = userinfo.create_userinfo_response(uri, method, body, headers)
                except Exception as error:  # oauthlib raises its OAuth2Errors here
                    status = getattr(error, "status_code", 500)
                    headers, text = getattr(error, "headers", {}), getattr(error, "json", "")
            else:
                return self.answer(404, {}, "")
            self.answer(status, headers, text)

        def do_GET(self):
            if self.path.startswith("/control/"):
                status, value = self.control("GET")
                return self.answer(status, {"Content-Type": "application/json"}, json.dumps(value))
            self.protocol("GET")

        def do_POST(self):
            if self.path.startswith("/control/"):
                status, value = self.control("POST")
                return self.answer(status, {"Content-Type": "application/json"}, json.dumps(value))
            self.protocol("POST")

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", action="append", default=[], help="ID:SECRET of a client that may introspect")
    parser.add_argument("--issuer", default="https://idp.test")
    arguments = parser.parse_args()
    clients = dict(entry.split(":", 1) for entry in arguments.client)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(clients, arguments.issuer)))
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
