import EchoRelayCore
import Logging

/// Everything `echorelay serve` is configured with, after flags and environment are merged.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// A `postgres://` URL. Its password is a secret and is never logged.
    public var databaseURL: Secret
    /// `whsec_` secrets; a signature by any one of them is accepted (rotation).
    public var ingestSecrets: [Secret]
    public var adminToken: Secret?
    public var migrateAtStart: Bool

    public init(
        host: String = "127.0.0.1", port: Int = 8080, databaseURL: Secret, ingestSecrets: [Secret],
        adminToken: Secret?, migrateAtStart: Bool = true
    ) {
        self.host = host
        self.port = port
        self.databaseURL = databaseURL
        self.ingestSecrets = ingestSecrets
        self.adminToken = adminToken
        self.migrateAtStart = migrateAtStart
    }
}

/// A configuration value that cannot be used, named by its environment variable.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let setting: String
    public let reason: String

    public init(setting: String, reason: String) {
        self.setting = setting
        self.reason = reason
    }

    public var description: String { "\(setting): \(reason)" }
}
