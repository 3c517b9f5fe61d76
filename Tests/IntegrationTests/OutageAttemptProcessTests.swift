import Clocks
import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Outages charge no attempts (issue #8), through the binary: Apple unreachable (nothing listens
/// on its port, so every connect is refused).
@Suite(.serialized) struct OutageAttemptProcessTests {
    /// The world's environment with Apple at a port nothing listens on.
    static func unreachable(_ world: SIWAWorld) -> [String: String] {
        var env = world.environment
        env["SIWA_APPLE_BASE_URL"] = "http://127.0.0.1:1"
        return env
    }

    /// Items of `job` that are not available with attempt 0 (state, attempt), or have a result (a
    /// succeeded range item keeps its row).
    static func spent(_ world: SIWAWorld, job: Int64) async throws -> Int {
        try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items i WHERE job_id = \(job) AND (state <> 'available' OR attempt <> 0
                OR first_attempt_at IS NOT NULL OR EXISTS (SELECT FROM siwa.results r WHERE r.job_id = i.job_id AND r.item_id = i.id))
            """)
    }

    @Test func fiveDrainsInARowAgainstAnUnreachableAppleEachExit75AndSpendNoAttempt() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 300, revokedFraction: 0)
        let job = try await world.enqueue()
        for run in 1...5 {
            let drain = try await BinaryProcess.run(["work", "--drain", "--concurrency", "16"], environment: Self.unreachable(world))
            #expect(drain.status == 75, "drain \(run): \(drain.stdout) \(drain.stderr.suffix(1500))")
            #expect(drain.stdout.contains("Apple unavailable"), "drain \(run): \(drain.stdout)")
            #expect(drain.stdout.contains("discarded=0 ") && drain.stdout.contains("failed=0 "), "drain \(run): \(drain.stdout)")
            #expect(try await Self.spent(world, job: job.jobID) == 0, "drain \(run) charged attempts")
        }
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 0)
        // Apple back: one drain does the whole job.
        let back = try await BinaryProcess.run(["work", "--drain", "--concurrency", "16"], environment: world.environment)
        #expect(back.status == 0, "\(back.stdout) \(back.stderr.suffix(1500))")
        let firstAttempts: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'succeeded' AND attempt = 1
            """)
        #expect(firstAttempts == 300)
        await world.tearDown()
    }

    @Test func anElevenItemRevocationSweepAgainstAnUnreachableAppleExits75WithNothingDiscarded() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 11, revokedFraction: 0)
        _ = try await world.database.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.accounts SET deleted_at = now()")
        }
        let job = try #require(try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRevocationSweep(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test"), "11 deleted accounts are due")
        #expect(job.items == 11)
        let drain = try await BinaryProcess.run(["work", "--drain"], environment: Self.unreachable(world))
        #expect(drain.status == 75, "\(drain.stdout) \(drain.stderr.suffix(1500))")
        #expect(drain.stdout.contains("never reached"), "\(drain.stdout)")
        let discarded: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'discarded'
            """)
        #expect(discarded == 0)
        #expect(try await Self.spent(world, job: job.jobID) == 0)
        let held: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_ciphertext IS NOT NULL")
        #expect(held == 11, "no token was wiped")
        await world.tearDown()
    }
}
