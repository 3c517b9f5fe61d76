import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Fair share through the real binary: two jobs of equal priority enqueued together, drained by
/// one `work --drain`; the order is read from the audit rows' ids (one per finished item, in the
/// order the completion statements wrote them).
@Suite struct FairShareTests {
    @Test func aSmallJobFinishesWithinTheFirstFivePercentOfALargeOneOfEqualPriority() async throws {
        let db = try await TestDatabase.create()
        let env = db.environment
        let large = try await BinaryProcess.run(["enqueue", "noop", "--items", "20000"], environment: env)
        let small = try await BinaryProcess.run(["enqueue", "noop", "--items", "200"], environment: env)
        #expect(large.stdout.contains("enqueued job 1 (noop) with 20000 items at priority 4"), "\(large)")
        #expect(small.stdout.contains("enqueued job 2 (noop) with 200 items at priority 4"), "\(small)")
        // Claims of 128 split fairly put the small job's 200 items in its first four claims, beside
        // at most about 256 of the large job's; 128 unwritten completions at most (`--max-unflushed`)
        // bound what else can finish first. So the bound below holds by construction, not by timing
        // (with the defaults, 1,088 completions could wait unwritten and CI once saw 1,016 ahead).
        let run = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop", "--concurrency", "64",
                                               "--claim-batch", "128", "--max-unflushed", "128"], environment: env)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr.suffix(1000))")
        let done: Int = try await db.scalar("SELECT count(*)::int FROM siwa.audit_log WHERE action = 'noop.done'")
        #expect(done == 20_200)
        let largeAhead: Int = try await db.scalar("""
            SELECT count(*)::int FROM siwa.audit_log
            WHERE action = 'noop.done' AND job_id = 1
              AND id < (SELECT max(id) FROM siwa.audit_log WHERE action = 'noop.done' AND job_id = 2)
            """)
        #expect(largeAhead <= 20_000 * 5 / 100, "the large job had \(largeAhead) items done when the small one finished")
        await db.drop()
    }
}
