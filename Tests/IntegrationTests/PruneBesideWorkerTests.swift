import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// `prune` while a long-running worker drains a job: the old partition goes, the worker neither
/// fails nor loses an item, and the job completes with every result.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PruneBesideWorkerTests {
    @Test func pruneBesideARunningWorker() async throws {
        let db = try await TestDatabase.create()
        let old = try await RetentionTests.enqueueNoop(db, items: 5)
        try await RetentionTests.drainNoop(db)
        try await db.pool.execute("UPDATE siwa.jobs SET created_at = now() - interval '41 days', finished_at = now() - interval '40 days' WHERE id = \(old)")
        let job = try await RetentionTests.enqueueNoop(db, items: 20_000)
        let worker = try BinaryProcess(["work", "--kinds", "noop", "--concurrency", "64"], environment: db.environment)
        try await Eventually.wait("the worker's first results", while: worker) {
            try await RetentionTests.count(db, "results", job: job) > 0
        }
        let prune = try await BinaryProcess.run(["prune"], environment: db.environment)
        #expect(prune.status == 0 && prune.stdout.contains("dropped partition j\(old): 1 jobs, 5 items"), "\(prune.stdout) \(prune.stderr)")
        try await Eventually.wait("job \(job) completed", while: worker) {
            let state: String = try await db.scalar("SELECT state FROM siwa.jobs WHERE id = \(job)")
            return state == "completed"
        }
        worker.signal(SIGTERM)
        let status = await worker.wait(timeout: .seconds(60))
        #expect(status == 0, "\(worker.stderr.suffix(800))")
        #expect(!worker.stderr.contains("\"level\":\"error\""), "\(worker.stderr.suffix(800))")
        #expect(try await RetentionTests.count(db, "results", job: job) == 20_000)
        await db.drop()
    }
}
