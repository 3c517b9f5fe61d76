import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// Succeeded range items keep their row (sql/0028_kept_range_items.sql,
/// `KindWrites.keepsSucceededRangeItems`): the result row, marked `kept`, is the record that the
/// item ended; counts, the rescue and the lease checks read it so.
@Suite struct KeptRangeItemTests {
    static let keeping = KindWrites(keepsSucceededRangeItems: true)

    static func progress(_ db: TestDatabase, _ job: Int64) async throws -> [String: Int] {
        let row = try #require(try await db.pool.query("""
            SELECT available::int, running::int, succeeded::int, terminal::int, items::int FROM siwa.job_progress WHERE job_id = \(job)
            """).first)
        var map: [String: Int] = [:]
        for key in ["available", "running", "succeeded", "terminal", "items"] { map[key] = try row.decode(key, as: Int.self) }
        return map
    }

    /// Item rows of the job that are no longer as planned.
    static func written(_ db: TestDatabase, _ job: Int64) async throws -> Int {
        try await db.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job) AND (state <> 'available' OR attempt <> 0 OR claim_singly)
            """)
    }

    static func claimAll(_ store: PostgresJobStore, owner: String, _ n: Int, lease: Duration = .seconds(30)) async throws -> [ClaimedItem] {
        var claimed: [ClaimedItem] = []
        while claimed.count < n {
            let batch = try await store.claim(owner: owner, kinds: ["noop"], limit: n - claimed.count, lease: lease)
            try #require(!batch.isEmpty)
            claimed += batch
        }
        return claimed
    }

    @Test func aKeptItemWritesItsResultOnlyAndCountsAsSucceeded() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 50, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 20, lease: .seconds(30))
        #expect(claimed.count == 20 && claimed.allSatisfy(\.claimedByRange))

        let first = RangeClaimTests.succeed(Array(claimed.prefix(5)))
        #expect(try await store.complete(first, owner: "w", writes: Self.keeping).count == 5)
        #expect(try await Self.written(db, job.jobID) == 0, "no item row is written")
        let kept: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND kept")
        #expect(kept == 5)
        var p = try await Self.progress(db, job.jobID)
        #expect(p["available"] == 30 && p["running"] == 15 && p["succeeded"] == 5 && p["terminal"] == 5)
        let backlog = try await store.backlog(kinds: ["noop"])
        #expect(backlog.dueNow == 30 && backlog.running == 15, "ItemCounts: a kept item is not running")

        // A second completion of the same item (its statement retried after the first committed)
        // meets the result's key; the flusher, down to the item, finds it written.
        do {
            _ = try await store.complete([first[0]], owner: "w", writes: Self.keeping)
            Issue.record("a second kept completion of an item was written")
        } catch let error as DatabaseError {
            #expect(error.isUniqueViolation, "\(error)")
        }
        #expect(try await store.keptResultExists(first[0], writes: Self.keeping))
        #expect(try await !store.keptResultExists(RangeClaimTests.succeed([claimed[10]])[0], writes: Self.keeping))
        #expect(try await !store.keptResultExists(first[0], writes: .none), "a kind that keeps no rows")
        #expect(try await store.complete(RangeClaimTests.succeed([claimed[10]]), owner: "v", writes: Self.keeping).isEmpty,
                "another owner's completion writes nothing")

        // A failure in the same range is written as before, beside kept items.
        let failed = Completion(item: claimed[5], kind: "noop", state: .failed, lastError: "no",
                                result: ResultRecord(outcome: NoopHandler.Outcome.ok))
        #expect(try await store.complete([failed] + RangeClaimTests.succeed(Array(claimed[6...])), owner: "w", writes: Self.keeping).count == 15)
        #expect(try await Self.written(db, job.jobID) == 1)
        #expect(try await store.completeFinishedJobs().isEmpty, "30 items are still planned")

        let rest = try await Self.claimAll(store, owner: "w", 30)
        #expect(try await store.complete(RangeClaimTests.succeed(rest), owner: "w", writes: Self.keeping).count == 30)
        #expect(try await store.completeFinishedJobs() == [job.jobID])
        p = try await Self.progress(db, job.jobID)
        #expect(p["available"] == 0 && p["running"] == 0 && p["succeeded"] == 49 && p["terminal"] == 50 && p["items"] == 50)

        let detail = try #require(try await JobListing(pool: db.pool).detail(jobID: job.jobID))
        #expect(detail.itemStates == ["succeeded": 49, "failed": 1], "\(detail.itemStates)")
        try await db.pool.execute("SELECT siwa.summarize_job(\(job.jobID))")
        let states: String = try await db.scalar("SELECT item_states::text FROM siwa.job_summaries WHERE job_id = \(job.jobID)")
        #expect(states == #"{"failed": 1, "succeeded": 49}"#, "\(states)")
        await db.drop()
    }

    @Test func aRescueHandsBackOnlyTheItemsWithoutAResult() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 10, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30))
        #expect(claimed.count == 10)
        #expect(try await store.complete(RangeClaimTests.succeed(Array(claimed.prefix(4))), owner: "w", writes: Self.keeping).count == 4)
        try await db.pool.execute("UPDATE siwa.item_leases SET expires_at = now() - interval '1 second'")
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 6, discarded: 0))
        let leases: Int = try await db.scalar("SELECT count(*)::int FROM siwa.item_leases")
        #expect(leases == 0, "every unfinished item went back, so the range went")
        #expect(try await Self.written(db, job.jobID) == 6, "the four kept rows are untouched")
        #expect(try await store.complete(RangeClaimTests.succeed(Array(claimed.suffix(6))), owner: "w", writes: Self.keeping).isEmpty,
                "the old owner's late completion of handed-back items writes nothing")

        let again = try await store.claim(owner: "v", kinds: ["noop"], limit: 10, lease: .seconds(30))
        #expect(again.count == 6 && again.allSatisfy { !$0.claimedByRange && $0.attempt == 2 })
        #expect(try await store.complete(RangeClaimTests.succeed(again), owner: "v", writes: Self.keeping).count == 6,
                "singly items are written as before")
        #expect(try await store.completeFinishedJobs() == [job.jobID])
        let p = try await Self.progress(db, job.jobID)
        #expect(p["succeeded"] == 10 && p["running"] == 0 && p["available"] == 0)
        let kept: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND kept")
        #expect(kept == 4)
        await db.drop()
    }

    /// The lock protocol between a completion of kept items and a rescue: a lease a completion
    /// holds (`FOR KEY SHARE`) is skipped; a lease the rescue could hand back only in part is taken
    /// from its owner, whose later kept completions under it write nothing.
    @Test func aHeldLeaseIsLeftAloneAndAPartlyRescuedOneIsTakenFromItsOwner() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 10, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30))
        #expect(claimed.count == 10)

        try await db.pool.execute("UPDATE siwa.item_leases SET expires_at = now() - interval '1 second'")
        let other = try await PostgresConnection.connect(db.configuration)
        defer { other.close() }
        // The lock a completion of kept items takes on their lease for its statement.
        try await other.simpleQuery(unsafeSQL: "BEGIN; SELECT id FROM siwa.item_leases FOR NO KEY UPDATE")
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 0, discarded: 0), "held: skipped")
        // A renewal waits for the completion rather than skipping the lease, then renews it.
        let renewal = Task { try await store.extendLeases(owner: "w", itemIDs: claimed.map(\.id), lease: .seconds(30)) }
        try await waitFor("the renewal to wait on the held lease") {
            let waiting: Int = try await db.scalar("SELECT count(*)::int FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
            return waiting == 1
        }
        try await other.simpleQuery(unsafeSQL: "COMMIT")
        #expect(try await renewal.value == 1)
        try await db.pool.execute("UPDATE siwa.item_leases SET expires_at = now() - interval '1 second'")

        // One item locked as a completion writing it would lock it: the rest go back, and the lease
        // is taken from its owner.
        try await other.simpleQuery(unsafeSQL: "BEGIN; SELECT id FROM siwa.job_items WHERE id = \(claimed[0].id) FOR UPDATE")
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 9, discarded: 0))
        let owner: String = try await db.scalar("SELECT owner FROM siwa.item_leases")
        #expect(owner == "w (rescued)")
        try await other.simpleQuery(unsafeSQL: "COMMIT")
        #expect(try await store.complete(RangeClaimTests.succeed([claimed[0]]), owner: "w", writes: Self.keeping).isEmpty,
                "the range is no longer w's")
        let results: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 0)
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 1, discarded: 0))
        let leases: Int = try await db.scalar("SELECT count(*)::int FROM siwa.item_leases")
        #expect(leases == 0)
        await db.drop()
    }
}
