import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// A statement or lock timeout while completing is not bad item data (issue #8 item 1).
@Suite(.serialized) struct CompletionTimeoutTests {
    @Test func aLockOnResultsUnderAOneSecondStatementTimeoutFailsNoItemAndStillMatches() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(50))
        try await world.seed(accounts: 3000, revokedFraction: 0.03)
        let job = try await world.enqueue()
        var env = world.environment
        env["PGOPTIONS"] = "-c statement_timeout=1000"   // the worker role's setting in the field report
        let worker = try BinaryProcess(["work", "--drain", "--concurrency", "32"], environment: env)
        try await waitFor("the first 200 results") {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) >= 200
        }
        let lock = try await TableLock.hold("siwa.results", on: world.database)
        // Held until the worker has seen its completion statements cancelled several times.
        let refused = "writing completions failed; keeping them and retrying"
        do {
            try await waitFor("three completion statements cancelled by the statement timeout") {
                worker.stderr.occurrences(of: refused) >= 3 || !worker.process.isRunning
            }
        } catch {
            try await lock.release()
            throw error
        }
        try await lock.release()
        let status = await worker.wait()
        #expect(worker.stderr.contains("57014"), "the timeouts should be statement timeouts")
        #expect(status == 0, "\(worker.stdout) \(worker.stderr.suffix(2000))")
        #expect(worker.stdout.contains("succeeded=3000 failed=0 discarded=0 "), "\(worker.stdout)")
        let failed: Int = try await world.database.scalar("""
            SELECT (items - succeeded)::int FROM siwa.job_progress WHERE job_id = \(job.jobID)
            """)
        #expect(failed == 0)
        let refusedAudit: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.audit_log WHERE action = 'item.completion_refused'
            """)
        #expect(refusedAudit == 0)
        let mismatch = try await world.mismatch(job: job.jobID)
        #expect(mismatch == nil, "MISMATCH: \(mismatch ?? "")")
        let unknown: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'unknown'")
        #expect(unknown == 0)
        #expect(world.sandbox.model.stats().requests["/auth/token"] == 3000, "each item called Apple once")
        await world.tearDown()
    }
}
