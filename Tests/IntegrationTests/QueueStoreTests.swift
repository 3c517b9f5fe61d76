import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

@Suite(.timeLimit(.minutes(20))) struct QueueStoreTests {
    @Test func expiredLeaseIsRescuedAndLateCompletionIsRefused() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 10, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "dead-worker", kinds: ["noop"], limit: 100, lease: .seconds(3))
        #expect(claimed.count == 10)
        #expect(try await store.rescueExpired(limit: 100) == RescueReport(retried: 0, discarded: 0))
        try await Task.sleep(for: .milliseconds(3500))   // let the 3 s lease lapse (not a timing assertion)
        #expect(try await store.rescueExpired(limit: 100) == RescueReport(retried: 10, discarded: 0))
        let late = claimed.map { Completion(item: $0, kind: "noop", state: .succeeded, result: ResultRecord(outcome: NoopHandler.Outcome.ok)) }
        #expect(try await store.complete(late, owner: "dead-worker", writes: .none).isEmpty)
        let again = try await store.claim(owner: "live-worker", kinds: ["noop"], limit: 100, lease: .seconds(30))
        #expect(again.count == 10 && again.allSatisfy { $0.attempt == 2 })
        let done = again.map { Completion(item: $0, kind: "noop", state: .succeeded, result: ResultRecord(outcome: NoopHandler.Outcome.ok)) }
        #expect(try await store.complete(done, owner: "live-worker", writes: .none).count == 10)
        let results: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 10)
        await db.drop()
    }

    @Test func lastAttemptLeaseExpiryDiscardsWithOneResult() async throws {
        let db = try await TestDatabase.create()
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 2, createdBy: "test")
        try await db.pool.withConnection { conn in try await conn.execute("UPDATE siwa.job_items SET max_attempts = 1") }
        let store = PostgresJobStore(pool: db.pool)
        _ = try await store.claim(owner: "dead", kinds: ["noop"], limit: 10, lease: .seconds(1))
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 0, discarded: 2))
        let discarded: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE outcome = 'discarded'")
        #expect(discarded == 2)
        await db.drop()
    }

    @Test func retryIsScheduledNoEarlierThanItsDelay() async throws {
        let db = try await TestDatabase.create()
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 1, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30))
        let before: Date = try await db.scalar("SELECT now()")
        let retry = Completion(item: claimed[0], kind: "noop", state: .available, delay: .seconds(42), lastError: "429")
        #expect(try await store.complete([retry], owner: "w", writes: .none).count == 1)
        let runAt: Date = try await db.scalar("SELECT run_at FROM siwa.job_items")
        // Scheduled 42 s after the completion, which happened after `before`.
        #expect(runAt.timeIntervalSince(before) >= 42)
        #expect(try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30)).isEmpty)
        let backlog = try await store.backlog(kinds: ["noop"])
        #expect(backlog.dueNow == 0 && backlog.running == 0 && backlog.nextRunAt != nil)
        await db.drop()
    }

    @Test func aSecondResultForAnItemIsImpossible() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 1, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 1, lease: .seconds(30))
        _ = try await store.complete([Completion(item: claimed[0], kind: "noop", state: .succeeded, result: ResultRecord(outcome: NoopHandler.Outcome.ok))],
                                     owner: "w", writes: .none)
        let error = await #expect(throws: DatabaseError.self) {
            try await db.pool.withConnection { conn in
                try await conn.execute("""
                    INSERT INTO siwa.results (item_id, job_id, outcome, attempt) VALUES (\(claimed[0].id), \(job.jobID), 'again', 1)
                    """)
            }
        }
        #expect(error?.isUniqueViolation == true, "the results key refuses it (23505), not some other error: \(String(describing: error))")
        await db.drop()
    }
}
