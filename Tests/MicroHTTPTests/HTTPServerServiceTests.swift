import Clocks
import Foundation
import Lifecycle
import Synchronization
import Testing
import TestSupport
@testable import MicroHTTP

/// `HTTPServer` as a `Lifecycle.Service`: run until a graceful stop or cancellation.
@Suite(.timeLimit(.minutes(5))) struct HTTPServerServiceTests {
    /// `/gate` waits for `gate`; everything else answers at once.
    func gated(_ gate: Latch) -> HTTPHandler {
        .async { request in
            if request.path == "/gate" { await gate.wait() }
            return .answer(.json(#"{"path":"\#(request.path)"}"#, status: 200))
        }
    }

    @Test func aGracefulStopLetsTheRequestInFlightFinishAndRefusesNewOnes() async throws {
        let gate = Latch()
        let server = HTTPServer(configuration: HTTPServer.Configuration(), handler: gated(gate))
        let port = try server.start()
        let running = Task { try await server.run() }
        let inFlight = Task { await get(port, "/gate") }
        try await eventually("the gated request is in flight") { server.inFlight == 1 }

        server.shutdownGracefully()
        #expect(await get(port, "/new") == shuttingDown, "a request arriving during the stop is refused")
        #expect(server.port == port, "still listening while the request in flight finishes")
        gate.open()
        #expect(await inFlight.value == #"200 {"path":"/gate"}"#)
        try await running.value
        #expect(server.port == 0)
    }

    @Test func runStartsTheServerItselfAndServes() async throws {
        let server = HTTPServer(configuration: HTTPServer.Configuration(), handler: gated(Latch()))
        let running = Task { try await server.run() }
        try await eventually("listening") { server.port != 0 }
        #expect(await get(server.port, "/x") == #"200 {"path":"/x"}"#)
        server.shutdownGracefully()
        try await running.value
        #expect(server.port == 0)
    }

    @Test func cancellationStopsAtOnceAndAnswersTheUnfinishedRequest503() async throws {
        let gate = Latch()
        defer { gate.open() }   // lets the abandoned handler task end
        let server = HTTPServer(configuration: HTTPServer.Configuration(), handler: gated(gate))
        let port = try server.start()
        let running = Task { try await server.run() }
        let inFlight = Task { await get(port, "/gate") }
        try await eventually("the gated request is in flight") { server.inFlight == 1 }
        running.cancel()
        try await running.value
        #expect(await inFlight.value == shuttingDown)
        #expect(server.port == 0)
    }

    /// The grace period runs on the configured clock: a request still in flight when it ends gets 503.
    @Test func theGracePeriodEndsOnTheServersClock() async throws {
        let gate = Latch()
        defer { gate.open() }
        let clock = ManualClock()
        let configuration = HTTPServer.Configuration(gracePeriod: .seconds(30), clock: clock)
        let server = HTTPServer(configuration: configuration, handler: gated(gate))
        let port = try server.start()
        let running = Task { try await server.run() }
        let inFlight = Task { await get(port, "/gate") }
        try await eventually("the gated request is in flight") { server.inFlight == 1 }
        server.shutdownGracefully()
        try await eventually("the stop waits out the grace period") { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(29))
        #expect(server.port == port && clock.sleeperCount == 1, "29 s are not the grace period")
        clock.advance(by: .seconds(1))
        try await running.value
        #expect(await inFlight.value == shuttingDown)
    }

    @Test func aStopAskedBeforeRunMeansRunNeverStarts() async throws {
        let server = HTTPServer(configuration: HTTPServer.Configuration(), handler: gated(Latch()))
        server.shutdownGracefully()
        try await server.run()
        #expect(server.port == 0)
        #expect(throws: HTTPServerError.self) { try server.start() }
    }

    @Test func aServiceGroupRunsTheServerAndStopsItWhenAnotherServiceEnds() async throws {
        let server = HTTPServer(configuration: HTTPServer.Configuration(), handler: gated(Latch()))
        let port = try server.start()
        let client = OneRequest(port: port)
        let group = ServiceGroup(services: [server, client], configuration: ServiceGroup.Configuration(signals: []))
        #expect(try await group.run() == .finished)
        #expect(client.answer.value == #"200 {"path":"/from-the-group"}"#)
        #expect(server.port == 0)
    }
}

/// A service that sends one request and returns (which ends its group).
private struct OneRequest: Service {
    let port: UInt16
    let answer = SharedText()

    func run() async throws {
        let text = await get(port, "/from-the-group")
        answer.set(text)
    }
}

private final class SharedText: Sendable {
    private let text = Mutex("")
    var value: String { text.withLock { $0 } }
    func set(_ value: String) { text.withLock { $0 = value } }
}
