import Foundation
import Hummingbird

enum JSONResponse {
    /// One encoder for every JSON answer and problem: a new one per answer was 1.5% of serve's
    /// CPU while the overload benchmark had it refuse about 1,400 events a second past the
    /// backlog bound.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func make(status: HTTPResponse.Status = .ok, _ value: some Encodable) throws -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value)))
        )
    }
}
