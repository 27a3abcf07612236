import Foundation
import NIOHTTP1
import Synchronization
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// Clients that are slow or never stop sending are cut off, and others are served meanwhile.
@Suite struct RequestLimitsTests {
    @Test func slowHeadsSlowBodiesAndEndlessBodiesAreCutOffWhileOthersAreServed() async throws {
        try await LiveServer.run(requestTimeout: .seconds(2)) { server in
            let port = server.http.port
            // Slowloris: a head that never ends, one header byte at a time.
            let slowHead = try await RawConnection.open(port: port)
            let slowHeadTask = Task {
                try await slowHead.send("POST /v1/events HTTP/1.1\r\nHost: relay\r\n")
                for _ in 0..<40 {
                    guard try await slowHead.sendIfOpen("X") else { break }
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            // A body that trickles in far slower than it was announced.
            let slowBody = try await RawConnection.open(port: port)
            try await slowBody.send("POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
            let slowBodyTask = Task {
                for _ in 0..<100 {
                    guard try await slowBody.sendIfOpen(" ") else { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // An endless chunked body, sent as fast as the server takes it.
            let endless = try await RawConnection.open(port: port)
            try await endless.send("POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = "2000\r\n" + String(repeating: " ", count: 0x2000) + "\r\n"
            let endlessTask = Task {
                for _ in 0..<10_000 { guard try await endless.sendIfOpen(chunk) else { break } }
            }

            // Meanwhile others are served. (Each check on a connection of its own: the server
            // closes an idle one after the 2 s timeout, and a pooled one reused just then fails.)
            let healthz = { try await server.http.send(.GET, "/healthz", headers: [("Connection", "close")]).status }
            #expect(try await healthz() == 200)

            let endlessAnswer = try await endless.readUntilClosed(within: .seconds(10))
            #expect(endlessAnswer.hasPrefix("HTTP/1.1 413"), "\(endlessAnswer.prefix(200))")
            #expect(endlessAnswer.contains("body-too-large"))

            // A byte that arrives after the deadline is answered 408; if a loaded machine
            // stalls the trickle longer than the timeout, the idle timeout closes it unanswered.
            let slowBodyAnswer = try await slowBody.readUntilClosed(within: .seconds(10))
            #expect(slowBodyAnswer.isEmpty || (slowBodyAnswer.hasPrefix("HTTP/1.1 408") && slowBodyAnswer.contains("request-timeout")),
                    "\(slowBodyAnswer.prefix(200))")

            // The head never finished, so there is no answer: the connection is just closed.
            #expect(try await slowHead.readUntilClosed(within: .seconds(10)) == "")

            for task in [slowHeadTask, slowBodyTask, endlessTask] { _ = await task.result }
            #expect(try await healthz() == 200)
            #expect(try await server.rowCounts()["events"] == 0)
        }
    }

    @Test func aDeclaredLengthOverTheCapIsRefusedBeforeTheBodyIsSent() async throws {
        try await LiveServer.run(requestTimeout: .seconds(1)) { server in
            let connection = try await RawConnection.open(port: server.http.port)
            try await connection.send("POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
            let answer = try await connection.readUntilClosed(within: .seconds(10))
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
        }
    }
}

/// A TCP client that writes whatever it is told, however slowly, and reads until the
/// server closes the connection.
final class RawConnection: Sendable {
    private let channel: any Channel
    private let received: Collector

    private init(channel: any Channel, received: Collector) {
        self.channel = channel
        self.received = received
    }

    static func open(port: Int) async throws -> RawConnection {
        let received = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(received) } }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, received: received)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Sends, or says false once the server has stopped reading or closed the connection.
    func sendIfOpen(_ text: String) async throws -> Bool {
        do {
            try await send(text)
            return true
        } catch {
            return false
        }
    }

    /// Everything the server sent until it closed the connection; throws if it stays open
    /// past `limit`.
    func readUntilClosed(within limit: Duration) async throws -> String {
        let deadline = ContinuousClock.now + limit
        while channel.isActive {
            guard ContinuousClock.now < deadline else {
                channel.close(promise: nil)
                throw TestSetupError("the server kept the connection open for longer than \(limit)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return received.text
    }

    /// Keeps every byte the server sends.
    final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        private let bytes = Mutex<[UInt8]>([])

        var text: String { String(decoding: bytes.withLock { $0 }, as: UTF8.self) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)  // a reset after the answer still ends the connection
        }
    }
}
