import Clocks
import Foundation
import Postgres
import Queue
import Synchronization
import Testing
import TestSupport
@testable import SIWAJobs

/// The no-op kind, keeping its succeeded range items' rows as the refresh validation does.
struct KeepingNoop: JobHandler {
    let kind = "noop"
    var writes: KindWrites { KindWrites(keepsSucceededRangeItems: true) }

    func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        items.map { _ in { .succeeded(ResultRecord(outcome: NoopHandler.Outcome.ok), audit: AuditRecord(action: "noop.done"), effect: nil) } }
    }
}

/// PostgreSQL, with the answer to some completion statements lost after they committed (a
/// connection dropped between the commit and its reply).
final class AnswerLosingStore: JobStore {
    let inner: PostgresJobStore
    private let toLose = Atomic<Int>(0)

    init(inner: PostgresJobStore, losing count: Int) {
        self.inner = inner
        toLose.store(count, ordering: .relaxed)
    }

    func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int] {
        let written = try await inner.complete(completions, owner: owner, writes: writes)
        if completions.count > 1, toLose.subtract(1, ordering: .relaxed).oldValue > 0 {
            throw DatabaseError(kind: .connection, message: "server closed the connection unexpectedly", connectionWasLost: true)
        }
        return written
    }
    func keptResultExists(_ completion: Completion, writes: KindWrites) async throws -> Bool {
        try await inner.keptResultExists(completion, writes: writes)
    }
    func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem] {
        try await inner.claim(owner: owner, kinds: kinds, limit: limit, lease: lease)
    }
    func jobs(ids: [Int64]) async throws -> [JobRecord] { try await inner.jobs(ids: ids) }
    func extendLeases(owner: String, itemIDs: [Int64], lease: Duration) async throws -> Int {
        try await inner.extendLeases(owner: owner, itemIDs: itemIDs, lease: lease)
    }
    func rescueExpired(limit: Int, sparing: String?, retryBudget: Duration) async throws -> RescueReport {
        try await inner.rescueExpired(limit: limit, sparing: sparing, retryBudget: retryBudget)
    }
    func pauseJob(id: Int64, reason: String) async throws -> Bool { try await inner.pauseJob(id: id, reason: reason) }
    func completeFinishedJobs() async throws -> [Int64] { try await inner.completeFinishedJobs() }
    func pausedJobs(kinds: [String]) async throws -> [Int64: String] { try await inner.pausedJobs(kinds: kinds) }
    func backlog(kinds: [String]) async throws -> QueueBacklog { try await inner.backlog(kinds: kinds) }
    func openJobs(kinds: [String]) async throws -> [JobRecord] { try await inner.openJobs(kinds: kinds) }
}

/// A completion statement of kept items retried after its first try committed (issue #12's kept
/// rows, `Flusher.write`): the retry meets the results key, and each item is counted as written,
/// once, never failed.
@Suite struct KeptCompletionRetryTests {
    @Test func aLostAnswerToACommittedCompletionFailsNoItemAndWritesNothingTwice() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 300, createdBy: "test")
        let store = AnswerLosingStore(inner: PostgresJobStore(pool: db.pool), losing: 2)
        let configuration = WorkerConfiguration(workerID: "kept-test", concurrency: 8, claimBatch: 50, pollInterval: .milliseconds(50),
                                                flushMaxItems: 40, flushInterval: .milliseconds(2), drain: true, drainHorizon: .zero)
        let sink = MemoryLogSink()
        let worker = Worker(store: store, handlers: [KeepingNoop()], configuration: configuration,
                            logger: Logger(label: "test", minimum: .warning, json: true, sink: sink))
        await worker.run()
        let report = try #require(worker.lastReport)
        #expect(report.succeeded == 300 && report.failed == 0 && report.unwritten == 0 && report.superseded == 0, "\(report)")
        #expect(report.databaseFailure == nil)
        #expect(sink.captured.contains { $0.contains("writing completions failed; keeping them and retrying") },
                "the lost answers should have been retried")
        let counts = try #require(try await db.pool.query("""
            SELECT (SELECT count(*) FROM siwa.results WHERE job_id = \(job.jobID))::int AS results,
                   (SELECT count(*) FROM siwa.results WHERE job_id = \(job.jobID) AND kept)::int AS kept,
                   (SELECT count(*) FROM siwa.audit_log WHERE job_id = \(job.jobID) AND action = 'noop.done')::int AS audit,
                   (SELECT count(*) FROM siwa.audit_log WHERE action = 'item.completion_refused')::int AS refused,
                   (SELECT succeeded FROM siwa.job_progress WHERE job_id = \(job.jobID))::int AS succeeded,
                   (SELECT state FROM siwa.jobs WHERE id = \(job.jobID)) AS state
            """).first)
        #expect(try counts.decode("results", as: Int.self) == 300 && counts.decode("kept", as: Int.self) == 300)
        #expect(try counts.decode("audit", as: Int.self) == 300, "one audit row per item")
        #expect(try counts.decode("refused", as: Int.self) == 0)
        #expect(try counts.decode("succeeded", as: Int.self) == 300)
        #expect(try counts.decode("state", as: String.self) == "completed")
        await db.drop()
    }
}
