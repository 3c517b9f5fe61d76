import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// Claims by range (sql/0026_range_claims.sql): a job's planned items are handed out past its
/// claim cursor with one lease row per range, their rows untouched until they complete; items that
/// come back are claimed singly.
@Suite struct RangeClaimTests {
    static func progress(_ db: TestDatabase, _ job: Int64) async throws -> (available: Int, running: Int, succeeded: Int) {
        let row = try #require(try await db.pool.query("""
            SELECT available::int, running::int, succeeded::int FROM siwa.job_progress WHERE job_id = \(job)
            """).first)
        return (try row.decode("available"), try row.decode("running"), try row.decode("succeeded"))
    }

    static func succeed(_ items: [ClaimedItem]) -> [Completion] {
        items.map { Completion(item: $0, kind: "noop", state: .succeeded, result: ResultRecord(outcome: NoopHandler.Outcome.ok)) }
    }

    @Test func plannedItemsGoOutByRangeAndTheirRowsAreWrittenOnlyWhenTheyComplete() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 50, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 20, lease: .seconds(30))
        #expect(claimed.count == 20 && claimed.allSatisfy { $0.claimedByRange && $0.attempt == 1 })
        let ids = try await db.pool.query("SELECT id FROM siwa.job_items WHERE job_id = \(job.jobID) ORDER BY id LIMIT 20")
            .map { try $0.decode("id", as: Int64.self) }
        #expect(claimed.map(\.id) == ids, "the job's first items, in id order")
        let written: Int = try await db.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND (state <> 'available' OR attempt <> 0)
            """)
        #expect(written == 0, "a range claim writes no item row")
        let lease = try #require(try await db.pool.query("SELECT first_id, last_id, owner FROM siwa.item_leases").first)
        #expect(try lease.decode("first_id", as: Int64.self) == ids.first && lease.decode("last_id", as: Int64.self) == ids.last)
        #expect(try lease.decode("owner", as: String.self) == "w")
        var p = try await Self.progress(db, job.jobID)
        #expect(p.available == 30 && p.running == 20 && p.succeeded == 0)

        #expect(try await store.complete(Self.succeed(Array(claimed.prefix(5))), owner: "w", writes: .none).count == 5)
        p = try await Self.progress(db, job.jobID)
        #expect(p.available == 30 && p.running == 15 && p.succeeded == 5)
        let attempts: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items WHERE state = 'succeeded' AND attempt = 1")
        #expect(attempts == 5, "the completion records the attempt the range started")
        let backlog = try await store.backlog(kinds: ["noop"])
        #expect(backlog.dueNow == 30 && backlog.running == 15)
        await db.drop()
    }

    /// sql/0027_item_fillfactor.sql: one statement finishing every item of a planned job leaves each
    /// row on its page (a HOT update: no new key entry), though until it commits each page holds
    /// every row's old and new version. At the earlier 50% fill about one row in eight moved.
    @Test func finishingEveryPlannedItemInOneStatementLeavesEachRowOnItsPage() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 2_000, createdBy: "test")
        let options: String = try await db.scalar("""
            SELECT c.reloptions::text FROM pg_class c JOIN siwa.item_partitions p ON c.relname = 'job_items_' || p.suffix
            WHERE p.lo <= \(job.jobID) AND \(job.jobID) < p.hi
            """)
        #expect(options.contains("fillfactor=40"), "\(options)")
        let pages = { () async throws -> [Int64: Int] in
            var map: [Int64: Int] = [:]
            for row in try await db.pool.query("""
                SELECT id, (ctid::text::point)[0]::int AS page FROM siwa.job_items WHERE job_id = \(job.jobID)
                """) { map[try row.decode("id")] = try row.decode("page") }
            return map
        }
        let before = try await pages()
        let store = PostgresJobStore(pool: db.pool)
        var claimed: [ClaimedItem] = []
        while claimed.count < 2_000 {
            let batch = try await store.claim(owner: "w", kinds: ["noop"], limit: 2_000 - claimed.count, lease: .seconds(30))
            try #require(!batch.isEmpty && batch.allSatisfy(\.claimedByRange))
            claimed += batch
        }
        #expect(try await store.complete(Self.succeed(claimed), owner: "w", writes: .none).count == 2_000)
        let after = try await pages()
        #expect(before.count == 2_000 && Set(before.values).count > 40, "the items span many pages")
        let moved = after.filter { before[$0.key] != $0.value }.count
        #expect(moved == 0, "\(moved) of 2,000 finished rows left their page")
        await db.drop()
    }

    @Test func aRangeIsRenewedWhileItsItemsAreInFlightAndOnlyTheRestOfAnExpiredOneComesBack() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 10, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(2))
        #expect(claimed.count == 10)
        #expect(try await store.complete(Self.succeed(Array(claimed.prefix(4))), owner: "w", writes: .none).count == 4)
        #expect(try await store.extendLeases(owner: "w", itemIDs: claimed.suffix(6).map(\.id), lease: .seconds(60)) == 1)
        try await Task.sleep(for: .milliseconds(2500))   // past the first lease (not a timing assertion)
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 0, discarded: 0), "renewed: still held")
        // Expire it by hand (as if the worker had stopped renewing), then rescue: the six unfinished
        // come back as singly items with the attempt the range had started; the four done stay.
        try await db.pool.execute("UPDATE siwa.item_leases SET expires_at = now() - interval '1 second'")
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 6, discarded: 0))
        let back: Int = try await db.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available' AND claim_singly AND attempt = 1
            """)
        #expect(back == 6)
        let leases: Int = try await db.scalar("SELECT count(*)::int FROM siwa.item_leases")
        #expect(leases == 0, "the range was handed back whole")
        #expect(try await store.complete(Self.succeed(Array(claimed.suffix(6))), owner: "w", writes: .none).isEmpty,
                "the late completion of a handed-back range writes nothing")
        let again = try await store.claim(owner: "v", kinds: ["noop"], limit: 10, lease: .seconds(30))
        #expect(again.count == 6 && again.allSatisfy { !$0.claimedByRange && $0.attempt == 2 })
        #expect(try await store.complete(Self.succeed(again), owner: "v", writes: .none).count == 6)
        #expect(try await store.completeFinishedJobs() == [job.jobID])
        await db.drop()
    }

    @Test func onlyTheRangesHoldingAnIDInFlightAreRenewed() async throws {
        let db = try await TestDatabase.create()
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 30, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        var ranges: [[ClaimedItem]] = []
        for _ in 0..<3 { ranges.append(try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30))) }
        #expect(ranges.allSatisfy { $0.count == 10 && $0.allSatisfy(\.claimedByRange) })
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.item_leases") as Int == 3)
        func renewed(_ ids: [Int64]) async throws -> [Int64] {
            try await db.pool.execute("UPDATE siwa.item_leases SET expires_at = now() + interval '30 seconds'")
            let n = try await store.extendLeases(owner: "w", itemIDs: ids, lease: .seconds(600))
            let rows = try await db.pool.query("""
                SELECT first_id FROM siwa.item_leases WHERE expires_at > now() + interval '60 seconds' ORDER BY first_id
                """)
            let firsts = try rows.map { try $0.decode("first_id", as: Int64.self) }
            #expect(firsts.count == n)
            return firsts
        }
        let starts = ranges.map { $0.map(\.id).min()! }
        // One id in the middle range, then the first and the last range's ends (the span covers the
        // middle range, which holds none of them), then an id no lease holds.
        #expect(try await renewed([ranges[1][4].id]) == [starts[1]])
        #expect(try await renewed([ranges[0].map(\.id).min()!, ranges[2].map(\.id).max()!]) == [starts[0], starts[2]])
        #expect(try await renewed([ranges[2].map(\.id).max()! + 1_000]).isEmpty)
        #expect(try await store.extendLeases(owner: "v", itemIDs: ranges[1].map(\.id), lease: .seconds(600)) == 0,
                "another owner's ids renew nothing of this owner's")
        await db.drop()
    }

    @Test func aReleasedRangeItemComesBackUnchargedAndSingly() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 3, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 3, lease: .seconds(30))
        let released = claimed.map { Completion(item: $0, kind: "noop", state: .available, uncharged: true, lastError: "stopping") }
        #expect(try await store.complete(released, owner: "w", writes: .none).count == 3)
        let rows = try await db.pool.query("""
            SELECT attempt::int, claim_singly, first_attempt_at IS NULL AS never FROM siwa.job_items WHERE job_id = \(job.jobID)
            """)
        #expect(try rows.allSatisfy { try $0.decode("attempt", as: Int.self) == 0 && $0.decode("claim_singly") && $0.decode("never") })
        let again = try await store.claim(owner: "v", kinds: ["noop"], limit: 3, lease: .seconds(30))
        #expect(again.count == 3 && again.allSatisfy { !$0.claimedByRange && $0.attempt == 1 })
        await db.drop()
    }

    @Test func cancellingAJobLeavesItsRangeInFlightToFinishAndCancelsTheRest() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 30, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30))
        #expect(try await JobControl(pool: db.pool).perform(.cancel, jobID: job.jobID) == .done)
        let cancelled: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items WHERE state = 'cancelled'")
        #expect(cancelled == 20, "the items not handed out")
        #expect(try await store.claim(owner: "v", kinds: ["noop"], limit: 10, lease: .seconds(30)).isEmpty)
        #expect(try await store.complete(Self.succeed(claimed), owner: "w", writes: .none).count == 10, "in flight: written")
        let results: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 10)
        await db.drop()
    }

    @Test func twoClaimsOfOneJobTakeDisjointRangesInOrder() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 100, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        async let a = store.claim(owner: "a", kinds: ["noop"], limit: 40, lease: .seconds(30))
        async let b = store.claim(owner: "b", kinds: ["noop"], limit: 40, lease: .seconds(30))
        let (first, second) = try await (a, b)
        #expect(first.count == 40 && second.count == 40)
        #expect(Set(first.map(\.id)).isDisjoint(with: second.map(\.id)))
        let cursor: Int64 = try await db.scalar("SELECT claim_cursor FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(cursor == max(first.map(\.id).max() ?? 0, second.map(\.id).max() ?? 0))
        let rest = try await store.claim(owner: "c", kinds: ["noop"], limit: 40, lease: .seconds(30))
        #expect(rest.count == 20 && rest.allSatisfy { $0.id > cursor })
        await db.drop()
    }
}
