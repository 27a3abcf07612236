import ArgumentParser
import EchoRelayCore
import EchoRelaySharedSignals
import EchoRelayServer
import Foundation
import Logging

/// Reads a setting: the flag if given, else the `ECHORELAY_*` environment variable, else nil.
/// An empty environment variable counts as unset.
enum Setting {
    static func value(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else { return nil }
        return value
    }

    /// `ECHORELAY_THREADS`: the event loops' thread count, nil for NIO's default (one a core).
    static func threads(_ flag: Int?) throws -> Int? {
        guard let text = flag.map(String.init) ?? value(nil, "ECHORELAY_THREADS") else { return nil }
        guard let threads = Int(text), (1...1024).contains(threads) else {
            throw ConfigurationError(setting: "ECHORELAY_THREADS", reason: "must be a whole number from 1 to 1024, got \"\(text)\"")
        }
        return threads
    }

    /// `ECHORELAY_PRIVATE_SUBSCRIBERS`: private hosts and ranges allowed over https.
    static func privateSubscribers(_ flag: String?) throws -> PrivateSubscriberAllowList {
        guard let text = value(flag, "ECHORELAY_PRIVATE_SUBSCRIBERS") else { return .none }
        do throws(AllowListError) {
            return try PrivateSubscriberAllowList(parsing: text)
        } catch {
            throw ConfigurationError(setting: "ECHORELAY_PRIVATE_SUBSCRIBERS", reason: error.reason)
        }
    }

    /// `ECHORELAY_SET_*`: nil when no transmitter is configured; the issuer, audience and JWKS
    /// URL go together, and the others need them.
    static func securityEvents(issuer: String?, audience: String?, jwksURL: String?, allowHTTP: Bool,
                               pushToken: String?) throws -> SecurityEventReceiverSettings? {
        let required = [("ECHORELAY_SET_ISSUER", value(issuer, "ECHORELAY_SET_ISSUER")),
                        ("ECHORELAY_SET_AUDIENCE", value(audience, "ECHORELAY_SET_AUDIENCE")),
                        ("ECHORELAY_SET_JWKS_URL", value(jwksURL, "ECHORELAY_SET_JWKS_URL"))]
        let token = value(pushToken, "ECHORELAY_SET_PUSH_TOKEN")
        let allowHTTP = allowHTTP || value(nil, "ECHORELAY_SET_ALLOW_HTTP") == "1"
        guard required.contains(where: { $0.1 != nil }) || token != nil || allowHTTP else { return nil }
        if let missing = required.first(where: { $0.1 == nil }) {
            throw ConfigurationError(setting: missing.0, reason: "is required to receive Shared Signals: set ECHORELAY_SET_ISSUER, ECHORELAY_SET_AUDIENCE and ECHORELAY_SET_JWKS_URL together")
        }
        return SecurityEventReceiverSettings(issuer: required[0].1!, audience: required[1].1!, jwksURL: required[2].1!,
                                             allowHTTP: allowHTTP, pushToken: token.map(Secret.init))
    }

    static func integer(_ flag: Int?, _ variable: String, default defaultValue: Int) throws -> Int {
        if let flag { return flag }
        guard let text = value(nil, variable) else { return defaultValue }
        guard let number = Int(text) else {
            throw ConfigurationError(setting: variable, reason: "must be a whole number, got \"\(text)\"")
        }
        return number
    }

    static func duration(_ flag: String?, _ variable: String, default defaultValue: Duration) throws -> Duration {
        guard let text = value(flag, variable) else { return defaultValue }
        guard let duration = DurationText.parse(text) else {
            throw ConfigurationError(setting: variable, reason: "must be a duration such as 500ms, 5s, 2m or 1h, got \"\(text)\"")
        }
        return duration
    }

    static func durations(_ flag: String?, _ variable: String, default defaultValue: [Duration]) throws -> [Duration] {
        guard let text = value(flag, variable) else { return defaultValue }
        guard let durations = DurationText.parseList(text) else {
            throw ConfigurationError(setting: variable, reason: "must be comma-separated durations such as 1s,5s,15s, got \"\(text)\"")
        }
        return durations
    }

    static func role(_ flag: String?) throws -> ServerRole {
        let text = value(flag, "ECHORELAY_ROLE") ?? "all"
        guard let role = ServerRole(rawValue: text) else {
            throw ConfigurationError(setting: "ECHORELAY_ROLE", reason: "must be all, ingest or workers, got \"\(text)\"")
        }
        return role
    }

    /// `ECHORELAY_BACKLOG_LIMIT`: a positive number of events, or `off` (nil) for no limit.
    static func backlogLimit(_ flag: String?) throws -> Int? {
        guard let text = value(flag, "ECHORELAY_BACKLOG_LIMIT") else { return ServerConfiguration.defaultBacklogLimit }
        if text.lowercased() == "off" { return nil }
        guard let limit = Int(text), (1...ServerConfiguration.maximumBacklogLimit).contains(limit) else {
            throw ConfigurationError(
                setting: "ECHORELAY_BACKLOG_LIMIT",
                reason: "must be a whole number of events from 1 to \(ServerConfiguration.maximumBacklogLimit), or off, got \"\(text)\""
            )
        }
        return limit
    }

    static func list(_ flag: String?, _ variable: String) -> [String] {
        (value(flag, variable) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// Where the data lives: `postgres://…`, `sqlite:PATH`, or unset for `echorelay.sqlite`
    /// in the working folder.
    static func database(_ flag: String?) throws -> DatabaseLocation {
        try DatabaseLocation.parse(value(flag, "ECHORELAY_DATABASE_URL").map(Secret.init))
    }
}

/// Logging options shared by every command that talks to a database or serves.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. (env: ECHORELAY_LOG_LEVEL, default: info)")
    var logLevel: String?

    @Option(help: "Log format on standard error: text, or json (one object per line, with event.id, user.id and subscription.id as keys). (env: ECHORELAY_LOG_FORMAT, default: text)")
    var logFormat: String?

    func bootstrap(label: String) throws -> Logger {
        let text = Setting.value(logLevel, "ECHORELAY_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ConfigurationError(setting: "ECHORELAY_LOG_LEVEL", reason: "must be one of trace, debug, info, notice, warning, error, critical")
        }
        let format = Setting.value(logFormat, "ECHORELAY_LOG_FORMAT") ?? "text"
        guard format == "text" || format == "json" else {
            throw ConfigurationError(setting: "ECHORELAY_LOG_FORMAT", reason: "must be text or json, got \"\(format)\"")
        }
        LoggingSystem.bootstrap { label in
            if format == "json" { return JSONLogHandler(label: label, logLevel: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}
