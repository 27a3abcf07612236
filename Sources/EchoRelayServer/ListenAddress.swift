import Foundation
import NIOCore
import NIOPosix

/// Where `serve` listens, checked before anything else starts: an address that cannot be
/// bound is refused with the address and what to do, before the store is opened or a first
/// run's secrets are made.
enum ListenAddress {
    static func check(host: String, port: Int) async throws {
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get()
        } catch {
            throw refusal(error, host: host, port: port) ?? error
        }
        try? await channel.close()
    }

    /// The error of a bind that failed, in words that name the address and the fix; nil for
    /// an error that is not about the address.
    static func refusal(_ error: any Error, host: String, port: Int) -> ConfigurationError? {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE:
                return ConfigurationError(setting: "ECHORELAY_PORT", reason: "cannot listen on \(address): the address is already in use, by another process (another echorelay serve?). Stop that process, or choose another port with --port or ECHORELAY_PORT")
            case EACCES:
                return ConfigurationError(setting: "ECHORELAY_PORT", reason: "cannot listen on \(address): permission denied (ports below 1024 need privileges). Choose a port from 1024 up with --port or ECHORELAY_PORT")
            case EADDRNOTAVAIL:
                return ConfigurationError(setting: "ECHORELAY_HOST", reason: "cannot listen on \(address): \(host) is not an address of this machine. Choose one of its addresses (127.0.0.1, or 0.0.0.0 for all) with --host or ECHORELAY_HOST")
            default:
                return ConfigurationError(setting: "ECHORELAY_HOST", reason: "cannot listen on \(address): \(String(cString: strerror(error.errnoCode)))")
            }
        }
        if error is SocketAddressError {
            return ConfigurationError(setting: "ECHORELAY_HOST", reason: "cannot listen on \(address): \(host) is not an IP address or a name this machine resolves. Give an address such as 127.0.0.1 or 0.0.0.0 with --host or ECHORELAY_HOST")
        }
        return nil
    }
}
