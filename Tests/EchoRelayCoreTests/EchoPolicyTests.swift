import EchoRelayCore
import Foundation
import Testing

@Suite struct EchoPolicyTests {
    static let header = try! OAuth1.authorizationHeader(
        method: "GET", url: "https://api.example.com/1.1/sdk/account.json", consumerKey: "ck", consumerSecret: "cs",
        token: "tok", tokenSecret: "ts", nonce: "n", timestamp: "1795428930"
    )
    let policy = EchoPolicy(allowedHosts: ["api.example.com", "Digits.Example.com:8443"], allowHTTP: false, consumerKey: "ck")

    func target(_ url: String, authorization: String = header, policy: EchoPolicy? = nil) -> Result<EchoTarget, VerificationReason> {
        (policy ?? self.policy).target(for: EchoCredentials(serviceProvider: url, authorization: Secret(authorization)))
    }

    @Test(arguments: [
        ("https://api.example.com/1.1/sdk/account.json", "https://api.example.com/1.1/sdk/account.json"),
        ("HTTPS://API.EXAMPLE.COM/1.1/sdk/account.json", "https://api.example.com/1.1/sdk/account.json"),
        ("https://api.example.com:443/v?x=1", "https://api.example.com:443/v?x=1"),
        ("https://digits.example.com:8443/v", "https://digits.example.com:8443/v"),
    ])
    func acceptsAllowedHosts(url: String, expected: String) throws {
        let target = try target(url).get()
        #expect(target.url == expected)
        #expect(target.tokenHash?.count == 32)
    }

    @Test(arguments: [
        ("http://api.example.com/v", VerificationReason.schemeNotAllowed),
        ("ftp://api.example.com/v", .schemeNotAllowed),
        ("https://api.example.com.evil.tld/v", .hostNotAllowed),
        ("https://evil.tld/api.example.com", .hostNotAllowed),
        ("https://api.example.com@evil.tld/v", .invalidURL),
        ("https://user:pass@api.example.com/v", .invalidURL),
        ("https://api%2eexample.com/v", .invalidURL),
        ("https://api.example.com%2F@evil.tld/v", .invalidURL),
        ("https://api.example.com:8443/v", .hostNotAllowed),
        ("https://digits.example.com/v", .hostNotAllowed),
        ("https://api.example.com./v", .hostNotAllowed),
        ("https://127.0.0.1/v", .hostNotAllowed),
        ("https://api.example.com\\@evil.tld/v", .invalidURL),
        ("https:///v", .invalidURL),
        ("not a url", .invalidURL),
        ("https://api.example.com/v#frag", .invalidURL),
    ])
    func refusesEverythingElseBeforeAnyRequest(url: String, reason: VerificationReason) {
        #expect(throws: reason) { try target(url).get() }
    }

    @Test func plainHTTPOnlyWhenAllowed() throws {
        let local = EchoPolicy(allowedHosts: ["127.0.0.1:8080", "localhost"], allowHTTP: true, consumerKey: "ck")
        #expect(try target("http://127.0.0.1:8080/v", policy: local).get().url == "http://127.0.0.1:8080/v")
        #expect(try target("http://localhost/v", policy: local).get().url == "http://localhost/v")
        #expect(throws: VerificationReason.hostNotAllowed) { try target("http://localhost:8080/v", policy: local).get() }
    }

    @Test func refusesAHeaderThatDoesNotParse() {
        #expect(throws: VerificationReason.invalidAuthorization) {
            try target("https://api.example.com/v", authorization: "OAuth oauth_consumer_key=ck").get()
        }
    }

    @Test func refusesAnotherConsumerKey() throws {
        let other = try OAuth1.authorizationHeader(
            method: "GET", url: "https://api.example.com/v", consumerKey: "someone-else", consumerSecret: "cs",
            token: "tok", tokenSecret: "ts", nonce: "n", timestamp: "1"
        )
        #expect(throws: VerificationReason.consumerKeyMismatch) { try target("https://api.example.com/v", authorization: other).get() }
    }

    @Test func refusesAnotherSignatureMethod() {
        let plaintext = Self.header.replacingOccurrences(of: "HMAC-SHA1", with: "PLAINTEXT")
        #expect(throws: VerificationReason.unsupportedSignatureMethod) {
            try target("https://api.example.com/v", authorization: plaintext).get()
        }
    }
}
