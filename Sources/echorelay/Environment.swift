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
        guard let text = flag.map(String.init) ?? value(nil, ServeSettings.threads.variable) else { return nil }
        guard let threads = Int(text), (1...1024).contains(threads) else {
            throw ConfigurationError(setting: ServeSettings.threads.variable, reason: "must be a whole number from 1 to 1024, got \"\(text)\"")
        }
        return threads
    }

    /// `ECHORELAY_PRIVATE_SUBSCRIBERS`: private hosts and ranges allowed over https.
    static func privateSubscribers(_ flag: String?) throws -> PrivateSubscriberAllowList {
        guard let text = value(flag, ServeSettings.privateSubscribers.variable) else { return .none }
        do throws(AllowListError) {
            return try PrivateSubscriberAllowList(parsing: text)
        } catch {
            throw ConfigurationError(setting: ServeSettings.privateSubscribers.variable, reason: error.reason)
        }
    }

    /// `ECHORELAY_SET_*`: nil when no transmitter is configured; the issuer and audience go
    /// together, and the others need them.
    static func securityEvents(issuer: String?, audience: String?, jwksURL: String?, allowHTTP: Bool,
                               pushToken: String?, polling: SetPollingOptions) throws -> SecurityEventReceiverSettings? {
        typealias S = ServeSettings
        let required = [(S.setIssuer, issuer), (S.setAudience, audience)].map { ($0.variable, value($1, $0.variable)) }
        let optional = [(S.setJwksURL, jwksURL), (S.setPushToken, pushToken), (S.setTransmitterToken, polling.setTransmitterToken),
                        (S.setPollURL, polling.setPollURL), (S.setPollToken, polling.setPollToken)]
            .map { ($0.variable, value($1, $0.variable)) }
        let allowHTTP = isOn(allowHTTP, S.setAllowHTTP)
        let given = (required + optional).filter { $0.1 != nil }.map(\.0) + (allowHTTP ? [S.setAllowHTTP.variable] : [])
        guard let first = given.first else { return nil }
        if let missing = required.first(where: { $0.1 == nil }) {
            throw ConfigurationError(setting: missing.0, reason: "is required to receive Shared Signals (\(first) is set): set ECHORELAY_SET_ISSUER and ECHORELAY_SET_AUDIENCE together; the transmitter's metadata gives the JWKS URL unless ECHORELAY_SET_JWKS_URL is set")
        }
        let poll = SecurityEventPollSettings(
            url: optional[3].1, token: optional[4].1.map(Secret.init),
            maxEvents: try integer(polling.setPollMaxEvents, S.setPollMaxEvents, in: 1...1000), wait: try duration(polling.setPollWait, S.setPollWait)
        )
        return SecurityEventReceiverSettings(issuer: required[0].1!, audience: required[1].1!, jwksURL: optional[0].1,
                                             allowHTTP: allowHTTP, pushToken: optional[1].1.map(Secret.init),
                                             transmitterToken: optional[2].1.map(Secret.init), poll: poll)
    }

    /// `ECHORELAY_OAUTH2_*`: nil when no authorization server is configured. The introspection
    /// URL and the client credentials go together, and the others need them; a message names
    /// the setting and never quotes the secret.
    static func oauth2(
        introspectionURL: String?, clientID: String?, clientSecret: String?, userInfoURL: String?, tokenClientID: String?,
        issuer: String?, allowHTTP: Bool
    ) throws -> OAuth2Configuration? {
        typealias S = ServeSettings
        let required = [(S.oauth2IntrospectionURL, introspectionURL), (S.oauth2ClientID, clientID), (S.oauth2ClientSecret, clientSecret)]
            .map { ($0.variable, value($1, $0.variable)) }
        let optional = [(S.oauth2UserInfoURL, userInfoURL), (S.oauth2TokenClientID, tokenClientID), (S.oauth2Issuer, issuer)]
            .map { ($0.variable, value($1, $0.variable)) }
        let allowHTTP = isOn(allowHTTP, S.oauth2AllowHTTP)
        let given = (required + optional).filter { $0.1 != nil }.map(\.0) + (allowHTTP ? [S.oauth2AllowHTTP.variable] : [])
        guard let first = given.first else { return nil }
        if let missing = required.first(where: { $0.1 == nil }) {
            throw ConfigurationError(setting: missing.0, reason: "is required with \(first): re-verifying over OAuth 2 needs ECHORELAY_OAUTH2_INTROSPECTION_URL, ECHORELAY_OAUTH2_CLIENT_ID and ECHORELAY_OAUTH2_CLIENT_SECRET together")
        }
        return OAuth2Configuration(introspectionURL: required[0].1!, clientID: required[1].1!, clientSecret: Secret(required[2].1!),
                                   userInfoURL: optional[0].1, tokenClientID: optional[1].1, issuer: optional[2].1, allowHTTP: allowHTTP)
    }

    /// A setting of `serve`'s table: the flag, else its variable, else its default value.
    static func text(_ flag: String?, _ setting: ServeSetting) -> String? {
        value(flag, setting.variable) ?? setting.defaultValue
    }

    /// A switch of `serve`'s table: on if the flag is given or its variable is `1`.
    static func isOn(_ flag: Bool, _ setting: ServeSetting) -> Bool {
        flag || value(nil, setting.variable) == "1"
    }

    /// A whole number in `range`: anything outside it is refused at start, never wrapped or
    /// taken as something else (a port of 70000 is not port 4464).
    static func integer(_ flag: Int?, _ setting: ServeSetting, in range: ClosedRange<Int>) throws -> Int {
        let text = try flag.map(String.init) ?? required(setting)
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(setting: setting.variable,
                                     reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    static func duration(_ flag: String?, _ setting: ServeSetting) throws -> Duration {
        try parsed(setting, flag, must: "a duration such as 500ms, 5s, 2m or 1h", DurationText.parse)
    }

    /// A duration that may be left unset (nil), with no default text of its own.
    static func optionalDuration(_ flag: String?, _ setting: ServeSetting) throws -> Duration? {
        guard let text = value(flag, setting.variable) else { return nil }
        guard let duration = DurationText.parse(text) else {
            throw ConfigurationError(setting: setting.variable, reason: "must be a duration such as 500ms, 5s, 2m or 1h, got \"\(text)\"")
        }
        return duration
    }

    static func durations(_ flag: String?, _ setting: ServeSetting) throws -> [Duration] {
        try parsed(setting, flag, must: "comma-separated durations such as 1s,5s,15s", DurationText.parseList)
    }

    /// The text of a setting that always has one (its table gives a default value).
    static func required(_ setting: ServeSetting, _ flag: String? = nil) throws -> String {
        guard let text = text(flag, setting) else { throw ConfigurationError(setting: setting.variable, reason: "is required") }
        return text
    }

    /// The text of a setting that always has one, read by `parse`; text it refuses (nil) is
    /// reported as "must be <expected>, got \"<text>\"".
    static func parsed<Value>(
        _ setting: ServeSetting, _ flag: String? = nil, must expected: String, _ parse: (String) -> Value?
    ) throws -> Value {
        let text = try required(setting, flag)
        guard let value = parse(text) else {
            throw ConfigurationError(setting: setting.variable, reason: "must be \(expected), got \"\(text)\"")
        }
        return value
    }

    static func role(_ flag: String?) throws -> ServerRole {
        try parsed(ServeSettings.role, flag, must: "all, ingest or workers", ServerRole.init(rawValue:))
    }

    static func durability(_ flag: String?) throws -> Durability {
        try parsed(ServeSettings.durability, flag, must: "local or standby", Durability.init(rawValue:))
    }

    /// `ECHORELAY_TRUSTED_PROXIES`: addresses and CIDR ranges, comma-separated.
    static func trustedProxies(_ flag: String?) throws -> [AddressRange] {
        guard let text = value(flag, ServeSettings.trustedProxies.variable) else { return [] }
        return try text.split(separator: ",", omittingEmptySubsequences: false).map { raw in
            let entry = raw.trimmingCharacters(in: .whitespaces)
            do throws(AllowListError) {
                guard !entry.isEmpty else { throw AllowListError("has an empty entry (two commas, or one at an end)") }
                return try AddressRange(entry)
            } catch {
                throw ConfigurationError(setting: ServeSettings.trustedProxies.variable, reason: error.reason)
            }
        }
    }

    /// `ECHORELAY_BACKLOG_LIMIT`: a positive number of events, or `off` (nil) for no limit.
    static func backlogLimit(_ flag: String?) throws -> Int? {
        let text = try required(ServeSettings.backlogLimit, flag)
        if text.lowercased() == "off" { return nil }
        guard let limit = Int(text), (1...ServerConfiguration.maximumBacklogLimit).contains(limit) else {
            throw ConfigurationError(
                setting: ServeSettings.backlogLimit.variable,
                reason: "must be a whole number of events from 1 to \(ServerConfiguration.maximumBacklogLimit), or off, got \"\(text)\""
            )
        }
        return limit
    }

    static func list(_ flag: String?, _ setting: ServeSetting) -> [String] {
        (text(flag, setting) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }
}

/// `--database-url` for the commands that work on the database directly, with `serve`'s
/// help, environment variable and default (`ServeSettings.databaseURL`).
struct DatabaseOption: ParsableArguments {
    @Option(name: .customLong(ServeSettings.databaseURL.flag), help: ServeSettings.databaseURL.argumentHelp)
    var databaseURL: String?

    /// Where the data lives: `postgres://…`, `sqlite:PATH`, or unset for `echorelay.sqlite` in
    /// the working folder (the flag, else `ECHORELAY_DATABASE_URL`, else that default).
    func location() throws -> DatabaseLocation {
        try DatabaseLocation.parse(Setting.value(databaseURL, ServeSettings.databaseURL.variable).map(Secret.init))
    }
}

/// Logging options shared by every command that talks to a database or serves.
struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong(ServeSettings.logLevel.flag), help: ServeSettings.logLevel.argumentHelp)
    var logLevel: String?

    @Option(name: .customLong(ServeSettings.logFormat.flag), help: ServeSettings.logFormat.argumentHelp)
    var logFormat: String?

    func bootstrap(label: String) throws -> Logger {
        let text = try Setting.required(ServeSettings.logLevel, logLevel)
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ConfigurationError(setting: ServeSettings.logLevel.variable, reason: "must be one of trace, debug, info, notice, warning, error, critical")
        }
        let format = try Setting.parsed(ServeSettings.logFormat, logFormat, must: "text or json") { text in
            text == "text" || text == "json" ? text : nil
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
