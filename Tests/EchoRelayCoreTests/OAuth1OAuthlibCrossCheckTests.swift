import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// EchoRelay's OAuth 1.0a signing held against code nobody here wrote: Python's `oauthlib`
/// signs the same requests, and both must produce the same header parameters, signature
/// included. Needs `python3` with `oauthlib` (`scripts/python-requirements.txt`); without
/// them the test fails and says how to install them — it is never skipped.
@Suite struct OAuth1OAuthlibCrossCheckTests {
    struct Case: Codable, Sendable {
        var method: String
        var url: String
        var consumer_key: String
        var consumer_secret: String
        var token: String?
        var token_secret: String?
        var nonce: String
        var timestamp: String
        var realm: String?
        /// A form-encoded body, sent with `Content-Type: application/x-www-form-urlencoded`.
        var body: String?
    }

    static let cases = [
        // RFC 5849 §1.2's photo request, with oauth_version (oauthlib always sends it).
        Case(method: "GET", url: "http://photos.example.net/photos?file=vacation.jpg&size=original",
             consumer_key: "dpf43f3p2l4k3l03", consumer_secret: "kd94hf93k423kf44",
             token: "nnch734d00sl2jdk", token_secret: "pfkkdhi9sl3r4s00", nonce: "chapoH", timestamp: "137131202"),
        // A Digits-style OAuth Echo verify request with an extra query parameter.
        Case(method: "GET", url: "https://api.digits.com/1.1/sdk/account.json?include_email=true",
             consumer_key: "xvz1evFS4wEEPTGEFPHBog", consumer_secret: "kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw",
             token: "370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb", token_secret: "LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE",
             nonce: "kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", timestamp: "1318622958"),
        // Upper-case host, default port, an encoded path, a query with "+", an empty value, a name
        // without "=", a repeated name and an encoded "+"; a form body; a realm; no token.
        Case(method: "POST", url: "https://API.Example.com:443/a%20b/c?x=%C3%A9+1&y&z=&x=%2B",
             consumer_key: "c k", consumer_secret: "s&e", nonce: "n", timestamp: "1",
             realm: "Example", body: "c2&a3=2+q"),
        // Non-ASCII everywhere it can be: query, body, token, secrets, nonce; a non-default port;
        // sub-delimiters in the path; a query parameter named realm (signed, unlike the header's).
        Case(method: "POST", url: "https://api.example.com:8443/v1/;p=1/a:b@c~d?realm=q&name=J%C3%B6rg",
             consumer_key: "ck", consumer_secret: "sécret/=", token: "tök/en=+", token_secret: "s é&=",
             nonce: "n-._~ x", timestamp: "1795428930", body: "status=H%C3%A9llo+W%C3%B6rld%21&empty=&flag"),
    ]

    @Test func oauthlibSignsEveryCaseExactlyAsEchoRelayDoes() throws {
        let theirs = try Self.signWithOAuthlib(Self.cases)
        try #require(theirs.count == Self.cases.count)
        for (example, theirHeader) in zip(Self.cases, theirs) {
            let body = try example.body.map(OAuth1.formParameters) ?? []
            let ours = try OAuthAuthorizationHeader.parse(OAuth1.authorizationHeader(
                method: example.method, url: example.url, consumerKey: example.consumer_key,
                consumerSecret: example.consumer_secret, token: example.token, tokenSecret: example.token_secret,
                nonce: example.nonce, timestamp: example.timestamp, realm: example.realm, bodyParameters: body
            ))
            let parsedTheirs = try OAuthAuthorizationHeader.parse(theirHeader)
            #expect(parsedTheirs.parameters == ours.parameters, "\(example.url)")
            #expect(parsedTheirs.realm == ours.realm, "\(example.url)")
            #expect(try OAuth1.isValidSignature(
                of: parsedTheirs, method: example.method, url: example.url, consumerSecret: example.consumer_secret,
                tokenSecret: example.token_secret, bodyParameters: body
            ), "\(example.url)")
        }
    }

    /// Runs oauthlib's `Client.sign` on each case; returns the `Authorization` headers.
    static func signWithOAuthlib(_ cases: [Case]) throws -> [String] {
        let script = """
            import json, sys
            try:
                from oauthlib.oauth1 import Client
            except ImportError:
                sys.exit(3)
            headers = []
            for case in json.load(sys.stdin):
                client = Client(case["consumer_key"], client_secret=case["consumer_secret"],
                                resource_owner_key=case.get("token"), resource_owner_secret=case.get("token_secret"),
                                nonce=case["nonce"], timestamp=case["timestamp"], realm=case.get("realm"))
                body = case.get("body")
                content_type = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else None
                _, signed, _ = client.sign(case["url"], http_method=case["method"], body=body, headers=content_type)
                headers.append(signed["Authorization"])
            json.dump(headers, sys.stdout)
            """
        let run = try Spawned("/usr/bin/env", ["python3", "-c", script], input: try JSONEncoder().encode(cases))
        run.waitUntilExit()
        let stdout = run.standardOutput
        let stderr = String(decoding: run.standardError, as: UTF8.self)

        let install = "`scripts/test` (it installs scripts/python-requirements.txt into .build/venv, first on PATH)"
        switch run.status ?? -1 {
        case 0:
            return try JSONDecoder().decode([String].self, from: stdout)
        case 127:
            throw CrossCheckSetupError("python3 was not found on PATH: install Python 3, then run \(install)")
        case 3:
            throw CrossCheckSetupError("the Python package oauthlib is missing: run \(install)")
        default:
            throw CrossCheckSetupError("python3 failed (status \(run.status ?? -1)): \(stderr)")
        }
    }
}

struct CrossCheckSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
