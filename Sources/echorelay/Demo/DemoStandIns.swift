import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns

// The demo's identity provider and app backend are the stand-ins the tests use
// (EchoRelayStandIns), each checking signatures with its own code; the demo adds its consumer
// key, its live lines, and a subscriber that refuses what no secret of its signed.

extension StandInProvider {
    /// The provider on `port`, knowing the demo app's consumer key and EchoRelay's OAuth 2
    /// client, printing each answer.
    static func demo(port: Int, output: DemoOutput) -> StandInProvider {
        let provider = StandInProvider()
        provider.addConsumer(key: DemoDefaults.consumerKey, secret: DemoDefaults.consumerSecret)
        provider.addOAuth2Client(id: DemoDefaults.oauth2ClientID, secret: DemoDefaults.oauth2ClientSecret)
        provider.serving(onPort: port)
        provider.onAnswer { answered in
            if answered.status == 200, let userID = answered.userID {
                let shown = answered.request == "GET account.json" ? "\(userID), \(answered.phoneNumber ?? "no phone") (signature checked)"
                    : "\(answered.why): \(userID)" + (answered.phoneNumber.map { ", \($0)" } ?? "")
                output.live("provider", "\(answered.request) → 200 \(shown)")
            } else {
                output.live("provider", "\(answered.request) → \(answered.status)\(answered.code.map { " code \($0)" } ?? "") (\(answered.why))")
            }
        }
        return provider
    }

    /// A user signs in: a new session (an OAuth 1.0a token and secret, and an OAuth 2 access
    /// token). Any earlier token of the user stays valid until revoked, as with Digits.
    func openSession(userID: String, phoneNumber: String) -> DemoSession {
        addAccount(userID: userID, phoneNumber: phoneNumber)
        let (token, secret) = issueToken(for: userID)
        return DemoSession(userID: userID, token: token, tokenSecret: secret,
                           accessToken: issueAccessToken(for: userID, clientID: DemoDefaults.oauth2ClientID))
    }

    /// The session ends for real: both of its tokens are dead.
    func endSession(_ session: DemoSession) {
        expire(token: session.token)
        revoke(accessToken: session.accessToken)
    }
}

extension StandInSubscriber {
    /// The subscriber on `port`, refusing (`401`) a delivery no secret of its signed, as a
    /// real app backend must, and printing each delivery.
    static func demo(port: Int, output: DemoOutput) -> StandInSubscriber {
        let subscriber = StandInSubscriber()
        subscriber.serving(onPort: port)
        subscriber.refusesBadSignatures = true
        subscriber.onDelivery { delivery, status in
            let what = "\(delivery.type ?? "?") #\(delivery.sequence.map(String.init) ?? "?") for \(delivery.userID ?? "?")"
                + (delivery.replayID != nil ? " (replay)" : "")
            let answer = status == 200 ? "200 (signature valid)" : "\(status): \(delivery.signatureProblem ?? "refused")"
            output.live("subscriber", "POST \(delivery.path) \(what), webhook-id \(delivery.webhookID ?? "-") → \(answer)")
        }
        return subscriber
    }

    func received(webhookID: String) -> [ReceivedDelivery] {
        deliveries.filter { $0.webhookID == webhookID }
    }
}

extension StandInSubscriber.ReceivedDelivery {
    var eventID: String? { object?["event_id"]?.stringValue }
    var type: String? { object?["type"]?.stringValue }
    var userID: String? { object?["user_id"]?.stringValue }
    var sequence: Int64? {
        if case .integer(let number)? = object?["sequence"] { return number }
        return nil
    }
    /// The `replay` member of the signed body: a deliberate resend by support staff.
    var replayID: String? { object?["replay"]?.objectValue?["id"]?.stringValue }
    /// Nil when a known secret signed it; otherwise why it does not count.
    var signatureProblem: String? {
        guard !signatureValid else { return nil }
        return webhookID == nil || webhookTimestamp == nil ? "webhook-id or webhook-timestamp missing" : "no signature matches the subscription's secret"
    }
}
