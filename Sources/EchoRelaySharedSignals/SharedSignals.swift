import EchoRelayCore

/// A receiver of one transmitter: what checks its SETs, and the client of its metadata and
/// stream endpoints, which also gives the JWKS URL when `ECHORELAY_SET_JWKS_URL` is not set.
public struct SharedSignals: Sendable {
    public let receiver: SecurityEventReceiver
    public let transmitter: TransmitterClient

    public init(settings: SecurityEventReceiverSettings) {
        let transmitter = TransmitterClient(issuer: settings.issuer, token: settings.transmitterToken, allowHTTP: settings.allowHTTP)
        let fetch: TransmitterKeys.Fetch = if let url = settings.jwksURL {
            JWKSFetch.from(url)
        } else {
            { @Sendable in
                guard let url = try await transmitter.discover().jwksURI else {
                    throw JWKSFetchError("the transmitter's metadata has no jwks_uri; set ECHORELAY_SET_JWKS_URL")
                }
                return try await JWKSFetch.from(url)()
            }
        }
        self.transmitter = transmitter
        receiver = SecurityEventReceiver(settings: settings, keys: TransmitterKeys(refetchInterval: settings.keysRefetchInterval, fetch: fetch))
    }
}
