import Foundation

/// The API's field names in the command line's words: an error the server words for the
/// API (`subscription_ids`) reaches a command-line user as the flag they type
/// (`--subscription`).
enum CLIWords {
    static let flags: [String: String] = [
        "subscription_ids": "--subscription", "subscription_id": "--subscription", "user_id": "--user",
        "types": "--type", "type": "--type", "event_types": "--event-type", "since": "--since", "until": "--until",
        "status": "--status", "reason": "--reason", "dry_run": "--dry-run", "actor": "--actor", "action": "--action",
        "target": "--target", "description": "--description", "limit": "--limit", "role": "--role", "name": "--name",
    ]

    static func flag(for field: String) -> String { flags[field] ?? field }

    /// Each API field name in `text` as its flag: a snake_case name anywhere, and any field
    /// named as the subject of a sentence (`reason: must not be empty`).
    static func translate(_ text: String) -> String {
        var result = text
        for (field, flag) in flags {
            let pattern = field.contains("_")
                ? "(?<![A-Za-z0-9_-])\(field)(?![A-Za-z0-9_])"
                : "(?<=^|; |, )\(field)(?=: )"
            result = result.replacingOccurrences(of: pattern, with: flag, options: .regularExpression)
        }
        return result
    }
}
