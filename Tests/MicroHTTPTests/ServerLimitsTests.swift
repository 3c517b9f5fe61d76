import Foundation
import Testing
import TestSupport
@testable import MicroHTTP

/// What the server tolerates, over raw sockets: an oversized `Content-Length` is refused before
/// any body is sent, a stalled request or idle connection is closed after the idle timeout, and
/// connections are capped in all and per client address.
@Suite struct ServerLimitsTests {
    /// A server whose handler answers 413 for `bodyTooLarge` and 200 otherwise, recording requests.
    static func server(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }, async: Bool = false,
                       seen: Seen = Seen()) throws -> (HTTPServer, UInt16) {
        var configuration = HTTPServer.Configuration(bodyLimit: 1024)
        configure(&configuration)
        let answer: @Sendable (HTTPServerRequest) -> HTTPServerResult = { request in
            seen.add(request)
            return .answer(request.bodyTooLarge ? .json(#"{"error":"body_too_large"}"#, status: 413) : .plain("ok\n", status: 200))
        }
        return try startedServer(configuration, handler: async ? .async { answer($0) } : .inline(answer))
    }

    static func post(length: String, port: UInt16, expectContinue: Bool = false) -> String {
        "POST /notify HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
            + (expectContinue ? "Expect: 100-continue\r\n" : "") + "Content-Length: \(length)\r\n\r\n"
    }

    @Test(arguments: [false, true])
    func anOversizedContentLengthIsRefusedBeforeTheBody(async: Bool) async throws {
        let seen = Seen()
        let (server, port) = try Self.server(async: async, seen: seen)
        defer { server.stopNow() }
        for expectContinue in [false, true] {
            let socket = try RawSocket(port: port)
            #expect(socket.send(Self.post(length: "10737418240", port: port, expectContinue: expectContinue)))
            // Not one byte of the 10 GiB body is sent: the answer must come anyway, then the close.
            let reading = await socket.readOffPool(waitingAtMost: 30)
            #expect(reading.status == 413, "async \(async), expect-continue \(expectContinue): \(reading.text)")
            #expect(!reading.text.contains("100 Continue"), "no invitation to send the body: \(reading.text)")
            #expect(reading.text.hasSuffix(#"{"error":"body_too_large"}"#), "\(reading.text)")
            #expect(reading.closed, "the connection is closed after the refusal, not kept waiting for the body")
            let request = try #require(seen.last)
            #expect(request.bodyTooLarge && request.body.isEmpty && request.bodyBytes == 10_737_418_240)
        }
        #expect(await get(port, "/after") == "200 ok\n", "the server goes on")
    }

    @Test func aBodyWithinTheLimitIsStillRead() async throws {
        let seen = Seen()
        let (server, port) = try Self.server(seen: seen)
        defer { server.stopNow() }
        let body = [UInt8](repeating: 0x61, count: 1024)
        #expect(try await RawHTTP.send(port: port, method: "POST", path: "/notify", body: body).status == 200)
        #expect(seen.last?.body == body && seen.last?.bodyTooLarge == false)
    }

    @Test func aPartialBodyIsCutAfterTheIdleTimeout() async throws {
        let seen = Seen()
        let (server, port) = try Self.server({ $0.idleTimeout = .seconds(1) }, seen: seen)
        defer { server.stopNow() }
        let socket = try RawSocket(port: port)
        #expect(socket.send(Self.post(length: "100", port: port) + String(repeating: "x", count: 10)))
        let reading = await socket.readOffPool(waitingAtMost: 60)
        #expect(reading.closed, "the stalled request's connection was never closed: \(reading)")
        #expect(seen.count == 0, "a partial request never reaches the handler")
        let silent = try RawSocket(port: port)
        #expect(await silent.readOffPool(waitingAtMost: 60).closed, "a connection that never sends is closed too")
        #expect(await get(port, "/after") == "200 ok\n")
    }

    @Test func connectionsOverTheLimitWaitUntilOneCloses() async throws {
        let (server, port) = try Self.server { $0.connectionLimit = 2 }
        defer { server.stopNow() }
        let held = try (0..<2).map { _ in try RawSocket(port: port) }
        for socket in held { #expect(socket.send("GET /held HTTP/1.1\r\nHost: x\r\n")) }   // headers unfinished
        try await eventually("both held connections are being served") { server.openConnections == 2 }
        let third = try RawSocket(port: port)
        #expect(third.send("GET /third HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
        let waiting = await third.readOffPool(waitingAtMost: 1)
        #expect(waiting.timedOut && waiting.bytes.isEmpty, "a third connection was served over the limit: \(waiting.text)")
        held[0].close()
        let served = await third.readOffPool(waitingAtMost: 30)
        #expect(served.status == 200, "the waiting connection is served once a slot frees: \(served.text)")
    }

    @Test func connectionsPerAddressAreCapped() async throws {
        let (server, port) = try Self.server { $0.connectionsPerIP = 1 }
        defer { server.stopNow() }
        let held = try RawSocket(port: port)
        #expect(held.send("GET /held HTTP/1.1\r\nHost: x\r\n"))
        try await eventually("the held connection is being served") { server.openConnections == 1 }
        let second = try RawSocket(port: port)
        second.send("GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let refused = await second.readOffPool(waitingAtMost: 30)
        #expect(refused.closed && refused.bytes.isEmpty, "a second connection from the address was served: \(refused)")
        held.close()
        try await eventually("the held connection is gone") { server.openConnections == 0 }
        #expect(await get(port, "/after") == "200 ok\n")
    }

    /// Several event loops accept from one socket, each its own libmicrohttpd daemon: the
    /// per-address limit still counts the address's connections on all of them, and a slot
    /// comes back when a connection closes.
    @Test func theAddressLimitCountsConnectionsOnEveryLoop() async throws {
        let (server, port) = try Self.server { $0.threads = 4; $0.connectionsPerIP = 3 }
        defer { server.stopNow() }
        var held = try (0..<3).map { _ in try RawSocket(port: port) }
        for socket in held { #expect(socket.send("GET /held HTTP/1.1\r\nHost: x\r\n")) }   // headers unfinished
        try await eventually("the held connections are being served") { server.openConnections == 3 }
        for _ in 0..<3 {
            let extra = try RawSocket(port: port)
            extra.send("GET /extra HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let refused = await extra.readOffPool(waitingAtMost: 30)
            #expect(refused.closed && refused.bytes.isEmpty, "a fourth connection from the address was served: \(refused)")
        }
        held.removeFirst().close()
        try await eventually("the closed connection is gone") { server.openConnections == 2 }
        #expect(await get(port, "/after") == "200 ok\n")
        for socket in held { socket.close() }
    }

    @Test func aClientTricklingBytesIsCutAtTheRequestDeadlineThoughTheIdleTimeoutNeverFires() async throws {
        let seen = Seen()
        let (server, port) = try Self.server({ $0.idleTimeout = .seconds(60); $0.requestDeadline = .seconds(2) }, seen: seen)
        defer { server.stopNow() }
        let socket = try RawSocket(port: port)
        #expect(socket.send("POST /notify HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
        // One header byte every 200 ms: never idle for the idle timeout. The server must cut the
        // connection; the client gives up after 300 bytes (60 s) if it never does.
        let cut = await socket.trickleOffPool(String(repeating: "X", count: 300), interval: .milliseconds(200))
        #expect(cut, "the trickling connection was never cut")
        #expect(seen.count == 0, "the trickled request never reached the handler")
        #expect(server.connectionsCutAtDeadline == 1)
        // A request that arrives whole is answered, and its connection's clock restarts at the answer.
        #expect(await get(port, "/after") == "200 ok\n")
    }
}
