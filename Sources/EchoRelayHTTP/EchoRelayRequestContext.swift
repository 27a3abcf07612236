import Hummingbird
import Logging

/// Per-request context. Bodies are capped at the ingest limit: no route needs more.
public struct EchoRelayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    public var maxUploadSize: Int { 64 * 1024 }
}
