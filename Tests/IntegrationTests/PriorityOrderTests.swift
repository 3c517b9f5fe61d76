import Clocks
import Foundation
import Postgres
import Queue
import Synchronization
import Testing
import TestSupport
@testable import SIWAJobs

/// The order items finish in, by job, across a run.
final class FinishLog: Sendable {
    private let jobs = Mutex<[Int64]>([])
    private let started = Atomic<Int>(0)
    private let gateOpen = Atomic<Bool>(false)

    func noteStart() -> Int { started.add(1, ordering: .relaxed).newValue }
    func noteFinish(_ job: Int64) { jobs.withLock { $0.append(job) } }
    var startedCount: Int { started.load(ordering: .relaxed) }
    var finished: [Int64] { jobs.withLock { $0 } }
    var isOpen: Bool { gateOpen.load(ordering: .relaxed) }
    func open() { gateOpen.store(true, ordering: .relaxed) }
}

/// The no-op kind, recording when each item finishes. Items of `heldJob` after its first
/// `freeItems` wait for the log's gate, so the worker is caught with full slots and a full buffer
/// of that job when the urgent job arrives.
struct RecordingNoop: JobHandler {
    let log: FinishLog
    let heldJob: Int64
    let freeItems: Int
    var kind: String { NoopHandler.kind }

    func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        try await NoopHandler().prepare(items, of: job).map { operation in
            { [log, heldJob, freeItems] in
                if log.noteStart() > freeItems && job.id == heldJob {
                    while !log.isOpen { try? await Task.sleep(for: .milliseconds(2)) }
                }
                let outcome = await operation()
                log.noteFinish(job.id)
                return outcome
            }
        }
    }
}

/// Priority in a small in-process run: a worker on PostgreSQL, the real claim, the no-op kind.
@Suite struct PriorityOrderTests {
    @Test func anUrgentJobEnqueuedMidDrainFinishesBeforeTheBulkJobMovesOn() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        let bulk = try await enqueuer.enqueueNoop(items: 2_000, priority: 7, createdBy: "test")
        let log = FinishLog()
        let configuration = WorkerConfiguration(workerID: "priority-test", concurrency: 4, claimBatch: 8, pollInterval: .milliseconds(50),
                                                flushMaxItems: 20, flushInterval: .milliseconds(2), drain: true, drainHorizon: .zero)
        let worker = Worker(store: PostgresJobStore(pool: db.pool), handlers: [RecordingNoop(log: log, heldJob: bulk.jobID, freeItems: 100)],
                            configuration: configuration, logger: Logger(label: "test", minimum: .error, json: true, sink: MemoryLogSink()))
        let run = Task { await worker.run() }
        // 100 bulk items done, 4 more holding every slot, the buffer filled behind them.
        try await Eventually.wait("104 bulk items started") { log.startedCount >= 104 }
        let urgent = try await enqueuer.enqueueNoop(items: 20, priority: 2, createdBy: "test")
        let bulkBefore = log.finished.count
        worker.wake()
        log.open()
        await run.value

        let report = try #require(worker.lastReport)
        #expect(report.succeeded == 2_020 && report.failed == 0 && report.databaseFailure == nil)
        let order = Array(log.finished.dropFirst(bulkBefore))
        let lastUrgent = try #require(order.lastIndex(of: urgent.jobID))
        let bulkAhead = order[..<lastUrgent].filter { $0 == bulk.jobID }.count
        // Ahead of the last urgent item may only finish what the worker already held or was
        // claiming when the urgent job arrived: its 4 slots, its ready buffer (prefetch 8 at C = 4,
        // claimBatch 8: `Worker.claimSizes`) and one claim batch (8); and, as items are counted as
        // they finish, up to 3 bulk items that started beside the last urgent one in the slots.
        #expect(bulkAhead <= 4 + 8 + 8 + 3, "\(bulkAhead) bulk items finished before the last urgent one")
        #expect(bulkBefore + bulkAhead < 2_000 / 10, "the urgent job finished within the bulk job's first 10%")
        #expect(order.filter { $0 == urgent.jobID }.count == 20)
        await db.drop()
    }

    @Test func urgentItemsEnqueuedAfterABulkJobAreTheFirstToFinish() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        let bulk = try await enqueuer.enqueueNoop(items: 500, priority: 7, createdBy: "test")
        let urgent = try await enqueuer.enqueueNoop(items: 20, priority: 2, createdBy: "test")
        let log = FinishLog()
        log.open()
        let configuration = WorkerConfiguration(workerID: "priority-test", concurrency: 4, claimBatch: 8, pollInterval: .milliseconds(50),
                                                flushMaxItems: 20, flushInterval: .milliseconds(2), drain: true, drainHorizon: .zero)
        let worker = Worker(store: PostgresJobStore(pool: db.pool), handlers: [RecordingNoop(log: log, heldJob: bulk.jobID, freeItems: 0)],
                            configuration: configuration, logger: Logger(label: "test", minimum: .error, json: true, sink: MemoryLogSink()))
        await worker.run()
        #expect(worker.lastReport?.succeeded == 520)
        // The claim that takes the last urgent items may fill up with bulk ones, which run beside
        // them in the 4 slots: at most 4 bulk items finish among the first 24.
        #expect(log.finished.prefix(24).filter { $0 == urgent.jobID }.count == 20, "\(log.finished.prefix(30))")
        await db.drop()
    }
}
