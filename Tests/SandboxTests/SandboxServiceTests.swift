import Foundation
import Lifecycle
import Testing
import TestSupport
@testable import Sandbox

/// `SandboxServer` as a `Lifecycle.Service`, over real HTTP.
@Suite(.timeLimit(.minutes(5))) struct SandboxServiceTests {
    /// Waits (at most 10 s) until `condition` holds; throws `PollTimeout` naming `what`.
    func eventually(_ what: String, _ condition: () -> Bool) async throws {
        try await Poll.until(what, timeout: .seconds(10), interval: .milliseconds(2)) { condition() }
    }

    @Test func runStartsTheSandboxAndAGracefulStopEndsIt() async throws {
        let server = SandboxServer(configuration: SandboxConfiguration(), model: SandboxModel(),
                                   signer: try SandboxFixture.sharedSigner.get())
        let running = Task { try await server.run() }
        try await eventually("listening") { server.port != 0 }
        #expect(try await RawHTTP.send(port: server.port, method: "GET", path: "/auth/keys").status == 200)
        server.shutdownGracefully()
        try await running.value
        #expect(server.port == 0)
    }

    /// A stop does not wait out the latency: the delayed request is answered at once, normally.
    @Test func aGracefulStopAnswersDelayedRequestsAtOnce() async throws {
        let f = try SandboxFixture(SandboxConfiguration(latency: .fixed(600_000)))
        let server = f.server, port = f.port
        let running = Task { try await server.run() }
        let delayed = Task { try await RawHTTP.send(port: port, method: "GET", path: "/auth/keys", timeoutSeconds: 60) }
        try await eventually("the request is delayed inside the sandbox") { f.model.stats().requests["/auth/keys"] == 1 }
        f.server.shutdownGracefully()
        try await running.value
        let reply = try await delayed.value
        #expect(reply.status == 200 && reply.text.contains(#""keys":["#))
        #expect(f.server.port == 0)
    }

    @Test func aStopAskedBeforeRunStartsNothing() async throws {
        let server = SandboxServer(configuration: SandboxConfiguration(), model: SandboxModel(),
                                   signer: try SandboxFixture.sharedSigner.get())
        server.shutdownGracefully()
        try await server.run()
        #expect(server.port == 0)
    }

    @Test func aServiceGroupRunsTheSandboxUntilCancelled() async throws {
        let f = try SandboxFixture()
        let server = f.server
        let group = Task {
            try await ServiceGroup(services: [server], configuration: ServiceGroup.Configuration(signals: [])).run()
        }
        #expect(try await RawHTTP.send(port: f.port, method: "GET", path: "/auth/keys").status == 200)
        group.cancel()
        #expect(try await group.value == .finished)
        #expect(f.server.port == 0)
    }
}
