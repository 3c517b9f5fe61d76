import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Issue #13's exact network checks, through the binary: plain http only to a parsed loopback
/// address, and proxies never carry loopback traffic.
@Suite(.serialized) struct NetworkChecksTests {
    @Test(arguments: ["http://127.evil.example.com", "http://localhost:9", "http://127.0.0.1.nip.io"])
    func plainHTTPToANameThatLooksLikeLoopbackExits78BeforeAnyItemIsCharged(_ url: String) async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 5, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_APPLE_BASE_URL"] = url
        let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(run.status == 78, "\(run.stdout) \(run.stderr.suffix(1500))")
        #expect((run.stdout + run.stderr).contains("SIWA_APPLE_BASE_URL '\(url)' is plain http to a host that is not a loopback"),
                "\(run.stdout) \(run.stderr.suffix(1500))")
        let charged: Int = try await world.database.scalar("""
            SELECT ((SELECT count(*) FROM siwa.job_items WHERE job_id = \(job.jobID) AND (attempt > 0 OR state <> 'available'))
                    + (SELECT count(*) FROM siwa.results WHERE job_id = \(job.jobID)))::int
            """)
        #expect(charged == 0)
        let doctor = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(doctor.status == 78, "\(doctor.stdout) \(doctor.stderr.suffix(800))")
        await world.tearDown()
    }

    @Test func proxyVariablesDoNotCarryLoopbackTraffic() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 30, revokedFraction: 0)
        let job = try await world.enqueue()
        // A "proxy" that would forward to the sandbox: every connection to it is counted.
        let sandboxPort = try #require(UInt16(world.sandbox.baseURL.split(separator: ":").last.map(String.init) ?? ""))
        let proxy = try FreezableProxy(targetPort: sandboxPort)
        defer { proxy.close() }
        var env = world.environment
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            env[name] = "http://127.0.0.1:\(proxy.port)"
        }
        env["no_proxy"] = "example.invalid"   // the user's own list is kept, and loopback is added to it
        let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr.suffix(1500))")
        let succeeded: Int = try await world.database.scalar("""
            SELECT succeeded::int FROM siwa.job_progress WHERE job_id = \(job.jobID)
            """)
        #expect(succeeded == 30)
        #expect(proxy.accepted == 0, "the proxy carried \(proxy.accepted) loopback connections")
        await world.tearDown()
    }
}
