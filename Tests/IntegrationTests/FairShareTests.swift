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
        let run = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop", "--concurrency", "64"], environment: env)
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
