import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1

/// The HTTP floor of the end-to-end benchmark (scripts/bench-e2e.bash, `e2e_floor`): what a
/// relay built on serve's HTTP libraries does on this machine when it does only the HTTP
/// exchanges of an event — one ingest POST in, one OAuth Echo GET to the provider and one
/// POST to each of the two subscribers out — and nothing else: no database, no signatures,
/// no parsing. Each event's exchanges run inside its request, which answers 202 once both
/// deliveries are answered. No EchoRelay can go faster in the same world, so its rate bounds
/// what the end-to-end figure can reach here.
///
///     echorelay-http-floor PORT PROVIDER_URL SUBSCRIBERS_URL
@main
struct HTTPFloor {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 4, let port = Int(arguments[1]) else {
            FileHandle.standardError.write(Data("usage: echorelay-http-floor PORT PROVIDER_URL SUBSCRIBERS_URL\n".utf8))
            exit(2)
        }
        let provider = arguments[2]
        let subscribers = ["\(arguments[3])/hooks/a", "\(arguments[3])/hooks/b"]
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let router = Router()
        router.post("/v1/events") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 65_536)
            let id = request.headers[.init("webhook-id")!] ?? "msg_floor"
            var echo = HTTPClientRequest(url: provider)
            echo.headers.add(name: "Authorization", value: #"OAuth oauth_token="1000000001-floor""#)
            _ = try await client.execute(echo, timeout: .seconds(5)).body.collect(upTo: 65_536)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for url in subscribers {
                    group.addTask {
                        var delivery = HTTPClientRequest(url: url)
                        delivery.method = .POST
                        delivery.headers.add(name: "Content-Type", value: "application/json")
                        delivery.headers.add(name: "webhook-id", value: id)
                        delivery.headers.add(name: "webhook-timestamp", value: "1795540000")
                        delivery.headers.add(name: "webhook-signature", value: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=")
                        delivery.body = .bytes(body)
                        _ = try await client.execute(delivery, timeout: .seconds(5)).body.collect(upTo: 1_024)
                    }
                }
                try await group.waitForAll()
            }
            return Response(status: .accepted)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
    }
}
