import Foundation
import Postgres
import SIWACrypto
import Testing
@testable import SIWAJobs

/// What an operator runs into: outages, wrong keys, paused jobs, bad settings.
@Suite(.serialized, .timeLimit(.minutes(20))) struct OperationsTests {
    @Test func appleOutageStopsTheDrainWithoutBurningItems() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 600, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_APPLE_BASE_URL"] = "http://127.0.0.1:1"   // nothing listens: connection refused
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8"], environment: env)
        #expect(run.status == 75, "\(run.stdout)\n\(run.stderr.suffix(1000))")
        #expect(run.stdout.contains("Apple unavailable"))
        let discarded: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'discarded'")
        let available: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available'")
        #expect(discarded == 0 && available == 600)
        let tried: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND attempt > 0")
        #expect(tried < 300, "the drain stops early instead of trying every item")
        await world.tearDown()
    }

    @Test func wrongTokenKeyPausesTheJob() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 100, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_TOKEN_KEY"] = SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined()
        let doctor = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(doctor.status == 78 && doctor.stdout.contains("FAIL  stored tokens"))
        let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(run.status == 78)
        #expect(run.stdout.contains("job \(job.jobID) paused") && run.stdout.contains("SIWA_TOKEN_KEY"))
        let failed: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results")
        #expect(failed == 0)
        // In the database: paused with a reason naming the key, every item uncharged, and no call
        // reached Apple (the token could not be opened, so nothing was sent).
        let paused: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.jobs WHERE id = \(job.jobID) AND state = 'paused' AND paused_reason LIKE '%SIWA_TOKEN_KEY%'
            """)
        #expect(paused == 1)
        let uncharged: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available' AND attempt = 0
            """)
        #expect(uncharged == 100)
        #expect((world.sandbox.model.stats().requests["/auth/token"] ?? 0) == 0)
        // Once fixed and resumed, the job completes.
        let resume = try await BinaryProcess.run(["job", "resume", "\(job.jobID)"], environment: world.environment)
        #expect(resume.status == 0)
        let rerun = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(rerun.status == 0)
        await world.tearDown()
    }

    @Test func aDrainLeavingAPausedJobBehindExitsWithConfigurationError() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 10, revokedFraction: 0)
        let job = try await world.enqueue()
        _ = try await world.database.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.jobs SET state = 'paused', paused_reason = 'invalid_client earlier' WHERE id = \(job.jobID)")
        }
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(run.status == 78)
        #expect(run.stdout.contains("job \(job.jobID) paused: invalid_client earlier"))
        await world.tearDown()
    }

    @Test func plainHTTPToARemoteHostIsRefusedBeforeAnyCall() async throws {
        let world = try await SIWAWorld.create()
        var env = world.environment
        env["SIWA_APPLE_BASE_URL"] = "http://192.0.2.1"
        let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(run.status == 78)
        #expect(run.stderr.contains("plain http to a host that is not a loopback address"))
        await world.tearDown()
    }

    @Test func doctorReportsAChangedMigration() async throws {
        let db = try await TestDatabase.create()
        _ = try await db.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.schema_migrations SET checksum = 'deadbeef' WHERE name = '0002_views.sql'")
        }
        let doctor = try await BinaryProcess.run(["doctor"], environment: db.environment
            .merging(["SIWA_CLIENT_ID": "com.x\u{1B}[31m\u{202E}"]) { $1 })
        #expect(doctor.stdout.contains("FAIL  migrations: applied with different text") && doctor.stdout.contains("0002_views.sql"))
        // A client ID every command refuses fails here too, shown escaped.
        #expect(doctor.stdout.contains("FAIL  client ID (SIWA_CLIENT_ID): 'com.x\\u{1B}[31m\\u{202E}' is not a client ID")
                && !doctor.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E }, "\(doctor.stdout)")
        let work = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop"], environment: db.environment)
        #expect(work.status == 78)
        await db.drop()
    }

    @Test func malformedDatabaseURLIsAConfigurationErrorWithoutThePassword() async throws {
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = "postgres://postgres:s3cretpw@[bad/qa1"
        let run = try await BinaryProcess.run(["status"], environment: env)
        #expect(run.status == 78)
        #expect(!run.stderr.contains("s3cretpw") && !run.stdout.contains("s3cretpw"))
        #expect(run.stderr.contains("DATABASE_URL"))
    }
}
