import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// The claim against PostgreSQL: priority first, fair shares among equal priorities, each job's
/// oldest items, and SKIP LOCKED among concurrent claimers (issue #9).
@Suite struct PriorityClaimTests {
    static func claimedByJob(_ items: [ClaimedItem]) -> [Int64: Int] {
        items.reduce(into: [:]) { $0[$1.jobID, default: 0] += 1 }
    }

    static func itemIDs(of job: Int64, _ db: TestDatabase) async throws -> [Int64] {
        try await db.pool.query("SELECT id FROM siwa.job_items WHERE job_id = \(job) ORDER BY id").map { try $0.decode("id") }
    }

    @Test func urgentJobsFirstThenEqualPrioritiesShareTheBatchOldestItemsFirst() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        let nightly = try await enqueuer.enqueueNoop(items: 500, priority: 7, createdBy: "test")
        let big = try await enqueuer.enqueueNoop(items: 300, createdBy: "test")
        let small = try await enqueuer.enqueueNoop(items: 5, createdBy: "test")
        let urgent = try await enqueuer.enqueueNoop(items: 7, priority: 2, createdBy: "test")
        let priorities: [Int] = [nightly.priority, big.priority, small.priority, urgent.priority]
        #expect(priorities == [7, 4, 4, 2], "the given priorities, else the ops default")
        let store = PostgresJobStore(pool: db.pool)

        let first = try await store.claim(owner: "w", kinds: ["noop"], limit: 100, lease: .seconds(30))
        #expect(Self.claimedByJob(first) == [urgent.jobID: 7, small.jobID: 5, big.jobID: 88])
        #expect(first.map(\.priority) == first.map(\.priority).sorted(), "returned most urgent first")
        #expect(first.prefix(7).allSatisfy { $0.jobID == urgent.jobID && $0.priority == 2 })
        let bigIDs = try await Self.itemIDs(of: big.jobID, db)
        #expect(first.filter { $0.jobID == big.jobID }.map(\.id) == Array(bigIDs.prefix(88)), "a job's oldest items first")

        // The ops level has 212 left: it takes them before the nightly job gets the rest.
        let second = try await store.claim(owner: "w", kinds: ["noop"], limit: 300, lease: .seconds(30))
        #expect(Self.claimedByJob(second) == [big.jobID: 212, nightly.jobID: 88])
        await db.drop()
    }

    @Test func aSmallJobGetsHalfOfEveryBatchBesideALargeOneOfEqualPriority() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        let large = try await enqueuer.enqueueNoop(items: 5_000, createdBy: "test")
        let small = try await enqueuer.enqueueNoop(items: 45, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        var rounds: [[Int64: Int]] = []
        for _ in 0..<3 {
            rounds.append(Self.claimedByJob(try await store.claim(owner: "w", kinds: ["noop"], limit: 40, lease: .seconds(30))))
        }
        #expect(rounds == [[large.jobID: 20, small.jobID: 20], [large.jobID: 20, small.jobID: 20], [large.jobID: 35, small.jobID: 5]])
        await db.drop()
    }

    @Test func concurrentClaimersNeverShareAnItemAndTogetherTakeThemAll() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        _ = try await enqueuer.enqueueNoop(items: 2_000, createdBy: "test")
        _ = try await enqueuer.enqueueNoop(items: 50, createdBy: "test")
        _ = try await enqueuer.enqueueNoop(items: 300, priority: 2, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await withThrowingTaskGroup(of: [ClaimedItem].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var mine: [ClaimedItem] = []
                    while true {
                        let batch = try await store.claim(owner: "w\(worker)", kinds: ["noop"], limit: 37, lease: .seconds(30))
                        if batch.isEmpty {
                            // A batch can come back empty while another claimer holds the last items' locks.
                            // (Items handed out by range stay `available` in their rows: job_progress counts them as running.)
                            let left: Int = try await db.scalar("SELECT COALESCE(sum(available), 0)::int FROM siwa.job_progress")
                            if left == 0 { return mine }
                        }
                        mine += batch
                    }
                }
            }
            return try await group.reduce(into: [ClaimedItem]()) { $0 += $1 }
        }
        #expect(claimed.count == 2_350)
        #expect(Set(claimed.map(\.id)).count == 2_350, "no item was claimed twice")
        #expect(claimed.allSatisfy { $0.attempt == 1 })
        let running: Int = try await db.scalar("SELECT COALESCE(sum(running), 0)::int FROM siwa.job_progress")
        #expect(running == 2_350)
        await db.drop()
    }

    @Test func aPausedOrCancelledJobIsNotClaimedWhateverItsPriority() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        let paused = try await enqueuer.enqueueNoop(items: 10, priority: 0, createdBy: "test")
        let cancelled = try await enqueuer.enqueueNoop(items: 10, priority: 1, createdBy: "test")
        let running = try await enqueuer.enqueueNoop(items: 10, priority: 9, createdBy: "test")
        let store = PostgresJobStore(pool: db.pool)
        #expect(try await store.pauseJob(id: paused.jobID, reason: "test"))
        #expect(try await JobControl(pool: db.pool).perform(.cancel, jobID: cancelled.jobID) == .done)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 100, lease: .seconds(30))
        #expect(Self.claimedByJob(claimed) == [running.jobID: 10])
        await db.drop()
    }
}
