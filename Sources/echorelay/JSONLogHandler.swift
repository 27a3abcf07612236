import EchoRelayCore
import Foundation
import Logging

/// `--log-format json`: one JSON object per line on standard error, for log collectors.
/// Keys: `time` (RFC 3339, UTC), `level`, `label`, `message`, then every metadata key as it
/// is (`event.id`, `user.id`, `subscription.id`, …). What goes in is what the text format
/// shows: secrets are never put in log metadata in the first place.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        var object = merged.mapValues(Self.json)
        object["time"] = .string(RFC3339.format(Date()))
        object["level"] = .string(event.level.rawValue)
        object["label"] = .string(label)
        object["message"] = .string(event.message.description)
        var line = JSONValue.object(object).canonicalEncoding()
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let value): .string(value.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let values): .object(values.mapValues(json))
        }
    }
}
