import Foundation
import Testing

/// `SIWA_HTTP_VERSION` / `work --http-version` end to end: the real worker, real PostgreSQL and
/// the sandbox behind Debian's nghttpx over real HTTPS. nghttpx's access log says which protocol
/// each request came in on (ALPN), and `work --stats` what the worker counted.
@Suite(.serialized, .timeLimit(.minutes(10))) struct HTTP2ProxyTests {
    /// The worker's `worker http:` line as numbers.
    private func httpStats(_ stdout: String) throws -> [String: Int] {
        let line = try #require(stdout.split(separator: "\n").first { $0.hasPrefix("worker http:") }, "no http line: \(stdout)")
        var fields: [String: Int] = [:]
        for pair in line.split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2, let n = Int(parts[1]) { fields[String(parts[0])] = n }
        }
        return fields
    }

    /// Asked for HTTP/2 (by the variable), the worker speaks h2 to the proxy, multiplexed on one
    /// connection; asked for HTTP/1.1 (by the flag, over a variable saying 2), it speaks http/1.1
    /// over kept-alive connections. Either way the verdicts match the sandbox's truth.
    @Test(arguments: ["2", "1.1"]) func theWorkerSpeaksTheVersionItIsAskedFor(version: String) async throws {
        var world = try await SIWAWorld.create()
        let proxy = try await Nghttpx(backendURL: world.sandbox.baseURL, backendCA: world.sandbox.caFile, directory: world.directory)
        defer { proxy.stop() }
        try await world.seed(accounts: 300, revokedFraction: 0.05)
        let job = try await world.enqueue()
        var environment = world.environment
        environment["SIWA_APPLE_BASE_URL"] = proxy.url
        environment["SIWA_CA_FILE"] = proxy.certificateFile
        environment["SIWA_HTTP_VERSION"] = "2"
        let flags = version == "2" ? [] : ["--http-version", "1.1"]
        let run = try await BinaryProcess.run(["work", "--drain", "--stats", "--concurrency", "32"] + flags, environment: environment)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        #expect(try await world.mismatch(job: job.jobID) == nil)
        let stats = try httpStats(run.stdout)
        let tokenCalls = proxy.requests.filter { $0.path == "/auth/token" }
        #expect(tokenCalls.count == 300, "one /auth/token call per account through the proxy")
        #expect(tokenCalls.allSatisfy { $0.status == "200" || $0.status == "400" })
        if version == "2" {
            #expect(proxy.requests.allSatisfy { $0.alpn == "h2" }, "\(proxy.requests.map(\.alpn))")
            #expect(stats["http2_responses"] == proxy.requests.count && stats["http1_responses"] == 0, "\(stats)")
            #expect(stats["connections_opened"] == 1, "32 streams fit on one multiplexed connection: \(stats)")
        } else {
            #expect(proxy.requests.allSatisfy { $0.alpn == "http/1.1" }, "\(proxy.requests.map(\.alpn))")
            #expect(stats["http1_responses"] == proxy.requests.count && stats["http2_responses"] == 0, "\(stats)")
            let connections = try #require(stats["connections_opened"])
            #expect(connections >= 2 && connections <= 32, "at most one per item in flight, kept alive: \(stats)")
        }
        await world.tearDown()
    }

    @Test func aBadVersionStopsTheWorkerWithAConfigurationError() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 20, revokedFraction: 0)
        _ = try await world.enqueue()
        var environment = world.environment
        environment["SIWA_HTTP_VERSION"] = "3"
        let run = try await BinaryProcess.run(["work", "--drain"], environment: environment)
        #expect(run.status == 78, "\(run.stderr.suffix(800))")
        #expect(run.stderr.contains("SIWA_HTTP_VERSION: expected 1.1 or 2, got '3'"), "\(run.stderr.suffix(800))")
        let charged: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE attempt > 0")
        #expect(charged == 0, "no item is charged")
        #expect(world.sandbox.model.stats().requests["/auth/token", default: 0] == 0, "Apple was never called")
        await world.tearDown()
    }
}
