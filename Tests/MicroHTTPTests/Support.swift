import Foundation
import Synchronization
import Testing
import TestSupport
@testable import MicroHTTP

/// A server on 127.0.0.1 with a kernel-picked port, started.
func startedServer(_ configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
                   handler: HTTPHandler) throws -> (HTTPServer, UInt16) {
    let server = HTTPServer(configuration: configuration, handler: handler)
    let port = try server.start()
    return (server, port)
}

/// Waits (at most 10 s) until `condition` holds; throws `PollTimeout` naming `what`.
func eventually(_ what: String, _ condition: () -> Bool) async throws {
    try await Poll.until(what, timeout: .seconds(10), interval: .milliseconds(2)) { condition() }
}

/// The last requests a handler saw.
final class Seen: Sendable {
    private let requests = Mutex<[HTTPServerRequest]>([])
    func add(_ request: HTTPServerRequest) { requests.withLock { $0.append(request) } }
    var last: HTTPServerRequest? { requests.withLock { $0.last } }
    var count: Int { requests.withLock { $0.count } }
}

/// `GET path` over real HTTP, as `<status> <body>` (or the client's error).
func get(_ port: UInt16, _ path: String, timeoutSeconds: Int = 30) async -> String {
    do {
        let reply = try await RawHTTP.send(port: port, method: "GET", path: path, timeoutSeconds: timeoutSeconds)
        return "\(reply.status) \(reply.text)"
    } catch {
        return "\(error)"
    }
}

let shuttingDown = #"503 {"error":"shutting_down"}"#
