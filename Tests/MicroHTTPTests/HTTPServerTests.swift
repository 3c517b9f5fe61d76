import Foundation
import Lifecycle
import Testing
import TestSupport
@testable import MicroHTTP

/// Answer, delay and reset over real HTTP on 127.0.0.1.
@Suite(.timeLimit(.minutes(5))) struct HTTPServerTests {
    @Test func answersWithStatusHeadersAndBodyOnTheReportedPort() async throws {
        let (server, port) = try startedServer(handler: .inline { request in
            .answer(HTTPServerResponse(status: 201, body: request.body, contentType: "text/x-echo",
                                       headers: [HTTPHeader("X-Method", request.method), HTTPHeader("X-Path", request.path)]))
        })
        defer { server.stopNow() }
        #expect(port != 0 && server.port == port)
        let reply = try await RawHTTP.send(port: port, method: "POST", path: "/echo?x=1", body: Array("hello".utf8))
        #expect(reply.status == 201)
        #expect(reply.text == "hello")
        #expect(reply.header("content-type") == "text/x-echo")
        #expect(reply.header("x-method") == "POST" && reply.header("x-path") == "/echo")
    }

    @Test func theHandlerSeesMethodPathHeadersQueryAndBody() async throws {
        let seen = Seen()
        let (server, port) = try startedServer(handler: .inline { request in
            seen.add(request)
            return .answer(.json(#"{"ok":true}"#, status: 200))
        })
        defer { server.stopNow() }
        let reply = try await RawHTTP.send(
            port: port, method: "PUT", path: "/a/b?team_id=T%201&flag&team_id=second&Case=x",
            headers: [("Content-Type", "Application/JSON; charset=utf-8"), ("Authorization", "Bearer t"),
                      ("X-Twice", "first"), ("X-Twice", "second")],
            body: Array("{}".utf8))
        #expect(reply.status == 200 && reply.text == #"{"ok":true}"#)
        let request = try #require(seen.last)
        #expect(request.method == "PUT" && request.path == "/a/b")
        #expect(request.query == ["team_id": "T 1", "Case": "x"], "decoded, first value wins, no valueless flag")
        #expect(request.header("X-TWICE") == "first" && request.headers["x-twice"] == "first")
        #expect(request.headers.filter { $0.name == "X-Twice" }.map(\.value) == ["first", "second"], "all kept, in order")
        #expect(request.contentType == "Application/JSON; charset=utf-8" && request.mediaType == "application/json")
        #expect(request.authorization == "Bearer t")
        #expect(request.body == Array("{}".utf8) && !request.bodyTooLarge && request.bodyBytes == 2)
    }

    @Test func aBodyOverItsPathsLimitIsDiscardedAndFlagged() async throws {
        let seen = Seen()
        var configuration = HTTPServer.Configuration()
        configuration.bodyLimit = { path in path == "/big" ? 1000 : 10 }
        let (server, port) = try startedServer(configuration, handler: .inline { request in
            seen.add(request)
            return .answer(HTTPServerResponse(status: request.bodyTooLarge ? 413 : 200))
        })
        defer { server.stopNow() }
        let body = [UInt8](repeating: 65, count: 20)
        #expect(try await RawHTTP.send(port: port, method: "POST", path: "/small", body: body).status == 413)
        let small = try #require(seen.last)
        #expect(small.bodyTooLarge && small.body.isEmpty && small.bodyBytes == 20)
        #expect(try await RawHTTP.send(port: port, method: "POST", path: "/big", body: body).status == 200)
        #expect(seen.last?.body == body && seen.last?.bodyTooLarge == false)
    }

    @Test func aDelayedAnswerComesNoSoonerThanItsDelay() async throws {
        let (server, port) = try startedServer(handler: .inline { _ in .delay(.milliseconds(80), .plain("late\n", status: 200)) })
        defer { server.stopNow() }
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await get(port, "/") == "200 late\n")
        #expect(clock.now - started >= .milliseconds(80))
    }

    /// One daemon thread, one request delayed for a minute: another request is still answered, so
    /// the delay holds no thread; a stop without grace period then sends the delayed answer at once.
    @Test func aDelayHoldsNoServerThreadAndAStopAnswersItAtOnce() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 1
        configuration.gracePeriod = .zero
        let (server, port) = try startedServer(configuration, handler: .inline { request in
            request.path == "/slow" ? .delay(.seconds(60), .plain("slow\n", status: 200)) : .answer(.plain("fast\n", status: 200))
        })
        let slow = Task { await get(port, "/slow", timeoutSeconds: 90) }
        try await eventually("the slow request is in flight") { server.inFlight == 1 }
        #expect(await get(port, "/fast") == "200 fast\n")
        #expect(server.inFlight == 1, "the slow request is still waiting")
        await server.stop()
        #expect(await slow.value == "200 slow\n")
        #expect(server.port == 0)
    }

    @Test func stopNowLeavesNoDelayedClientHanging() async throws {
        let (server, port) = try startedServer(handler: .inline { _ in .delay(.seconds(60), .plain("slow\n", status: 200)) })
        let slow = Task { await get(port, "/slow", timeoutSeconds: 30) }
        try await eventually("the slow request is in flight") { server.inFlight == 1 }
        server.stopNow()
        // Answered at once or closed: either way not left to time out after 30 s.
        #expect(await slow.value != "\(RawHTTPError.timeout)")
    }

    @Test func resetClosesTheConnectionWithoutAResponse() async throws {
        let (server, port) = try startedServer(handler: .inline { request in
            request.path == "/reset" ? .reset : .answer(.plain("ok\n", status: 200))
        })
        defer { server.stopNow() }
        await #expect(throws: RawHTTPError.closedWithoutResponse) {
            try await RawHTTP.send(port: port, method: "POST", path: "/reset", body: Array("x".utf8))
        }
        #expect(await get(port, "/next") == "200 ok\n", "the server goes on")
        try await eventually("nothing in flight") { server.inFlight == 0 }
    }

    @Test func anAsyncHandlerAnswersAfterItsAwaitAndMayDelayOrReset() async throws {
        let gate = Latch()
        let (server, port) = try startedServer(handler: .async { request in
            switch request.path {
            case "/gate":
                await gate.wait()
                return .answer(.json(#"{"status":"opened"}"#, status: 200))
            case "/delay": return .delay(.milliseconds(20), .plain("delayed\n", status: 202))
            default: return .reset
            }
        })
        defer { server.stopNow() }
        let waiting = Task { await get(port, "/gate") }
        try await eventually("the gated request is in flight") { server.inFlight == 1 }
        gate.open()
        #expect(await waiting.value == #"200 {"status":"opened"}"#)
        #expect(await get(port, "/delay") == "202 delayed\n")
        #expect(await get(port, "/other") == "\(RawHTTPError.closedWithoutResponse)")
    }

    @Test func startFailsOnABadHostAPortInUseAndAfterAStop() throws {
        let (server, port) = try startedServer(handler: .inline { _ in .reset })
        #expect(throws: HTTPServerError.self) { try server.start() }
        let clash = HTTPServer(configuration: HTTPServer.Configuration(port: port), handler: .inline { _ in .reset })
        let error = #expect(throws: HTTPServerError.self) { try clash.start() }
        #expect(error?.code == .cannotListen && error?.description == "could not listen on 127.0.0.1:\(port)")
        let named = HTTPServer(configuration: HTTPServer.Configuration(host: "localhost"), handler: .inline { _ in .reset })
        #expect(throws: HTTPServerError(.invalidHost, "host: 'localhost' is not an IPv4 address")) { try named.start() }
        server.stopNow()
        #expect(throws: HTTPServerError(.stopped, "server was stopped; it does not start again")) { try server.start() }
    }
}
