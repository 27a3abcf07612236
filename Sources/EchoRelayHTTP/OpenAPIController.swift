import Hummingbird

/// `GET /openapi.yaml`: the OpenAPI 3.1 description of the HTTP API, as it is in
/// `Sources/EchoRelayHTTP/OpenAPI/openapi.yaml` (embedded in the binary at build time, so a
/// deployment stays one file). No token is needed: it describes the API, it holds no data.
/// `OpenAPITests` keeps it true: every route is described, every described route exists, and
/// the answers of a live server match its schemas.
struct OpenAPIController<Context: RequestContext>: Sendable {
    /// The document's bytes, exactly as in the source tree.
    static var document: [UInt8] { PackageResources.openapi_yaml }

    func addRoutes(to router: Router<Context>) {
        router.get("/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml"],
                body: .init(byteBuffer: ByteBuffer(bytes: Self.document))
            )
        }
    }
}
