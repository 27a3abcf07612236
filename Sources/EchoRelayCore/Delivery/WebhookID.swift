import Crypto
import Foundation

/// The stable `webhook-id` of an (event, subscription) pair: `msg_` and the first 26 hex
/// digits of MD5(event id + "/" + subscription id). Every delivery of the pair carries it,
/// retries and replays included, so a subscriber deduplicates on it. The embedded store
/// computes it here; PostgreSQL computes it in the statements that fan an event out
/// (`WebhookIDSQL`), and the store conformance suite checks both against this. MD5 only
/// spreads the ids; nothing relies on it being secret.
public enum WebhookID {
    public static func make(eventID: String, subscriptionID: String) -> String {
        let digest = Insecure.MD5.hash(data: Data((eventID + "/" + subscriptionID).utf8))
        return "msg_" + String(digest.lowercaseHex.prefix(26))
    }
}
