import EchoRelayCore
import Hummingbird
import NIOCore

/// Per-request context. Bodies are capped at the ingest limit: no route needs more.
public struct EchoRelayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection, so a refused body can stop it being read.
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    public static let maxBodySize = IncomingEvent.maximumBodySize
    public var maxUploadSize: Int { Self.maxBodySize }
}
