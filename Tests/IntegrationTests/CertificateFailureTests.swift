import Foundation
import Postgres
import Sandbox
import Testing

/// Issue #12's certificate failures, through the real binary, real PostgreSQL and the sandbox
/// over real HTTPS: an untrusted CA, a wrong host name and an expired certificate each stop the
/// run with a configuration error naming the cause (exit 78), before any item is charged, and
/// the items stay runnable.
@Suite(.serialized) struct CertificateFailureTests {
    static let accounts = 20

    /// Runs a drain that must stop on the certificate; checks exit 78, the paused job's reason
    /// (which must contain `cause`), and that no item was charged or answered.
    private func drainStopsOnTheCertificate(_ world: SIWAWorld, job: Int64, environment: [String: String],
                                            cause: String) async throws {
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8"], environment: environment)
        let output = "\(run.stdout) \(run.stderr.suffix(1500))"
        #expect(run.status == 78, "\(output)")
        #expect(run.stdout.contains("job \(job) paused: TLS certificate refused while calling Apple"), "\(output)")
        #expect(run.stdout.contains(cause), "\(output)")
        #expect(run.stdout.contains("SIWA_CA_FILE"), "the reason says what to fix: \(output)")
        let untouched: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items i WHERE job_id = \(job) AND state = 'available' AND attempt = 0
                AND NOT EXISTS (SELECT FROM siwa.results r WHERE r.job_id = i.job_id AND r.item_id = i.id)
            """)
        #expect(untouched == Self.accounts, "every item uncharged and runnable")
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results")
        #expect(results == 0)
        #expect((world.sandbox.model.stats().requests["/auth/token"] ?? 0) == 0, "no request got past the handshake")
    }

    @Test func anUntrustedCAStopsTheRunUnchargedAndTrustingItLetsTheJobFinish() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: Self.accounts, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        let removed = env.removeValue(forKey: "SIWA_CA_FILE")   // the system store alone
        let caFile = try #require(removed)
        try await drainStopsOnTheCertificate(world, job: job.jobID, environment: env,
                                             cause: "is not trusted: it does not chain to a trusted CA")
        // A CA file that cannot be read is a configuration error naming the variable, before any call.
        env["SIWA_CA_FILE"] = world.directory.appendingPathComponent("missing.pem").path
        let missing = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(missing.status == 78, "\(missing.stdout) \(missing.stderr.suffix(800))")
        #expect(missing.stderr.contains("SIWA_CA_FILE: '\(env["SIWA_CA_FILE"] ?? "")' cannot be read"), "\(missing.stderr.suffix(800))")
        env.removeValue(forKey: "SIWA_CA_FILE")
        // Fixed (the CA trusted, here with the flag) and resumed: the same items run, each once.
        let resume = try await BinaryProcess.run(["job", "resume", "\(job.jobID)"], environment: env)
        #expect(resume.status == 0, "\(resume.stdout) \(resume.stderr.suffix(800))")
        let fixed = try await BinaryProcess.run(["work", "--drain", "--ca-file", caFile], environment: env)
        #expect(fixed.status == 0, "\(fixed.stdout) \(fixed.stderr.suffix(1500))")
        let succeeded: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'succeeded' AND attempt = 1
            """)
        #expect(succeeded == Self.accounts)
        await world.tearDown()
    }

    @Test func aCertificateForAnotherHostStopsTheRunUncharged() async throws {
        var world = try await SIWAWorld.create(tls: SandboxTLS(serverName: "appleid.example.test"))
        try await world.seed(accounts: Self.accounts, revokedFraction: 0)
        let job = try await world.enqueue()
        try await drainStopsOnTheCertificate(world, job: job.jobID, environment: world.environment,
                                             cause: "does not name the host 127.0.0.1")
        await world.tearDown()
    }

    @Test func anExpiredCertificateStopsTheRunUncharged() async throws {
        var world = try await SIWAWorld.create(tls: SandboxTLS(expired: true))
        try await world.seed(accounts: Self.accounts, revokedFraction: 0)
        let job = try await world.enqueue()
        try await drainStopsOnTheCertificate(world, job: job.jobID, environment: world.environment, cause: "has expired")
        await world.tearDown()
    }
}
