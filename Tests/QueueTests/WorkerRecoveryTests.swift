import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// A store that refuses, like a unique-key violation would, every completion batch holding one item.
final class RefusingStore: JobStore {
    let inner: MemoryJobStore
    let refused: Int64
    init(inner: MemoryJobStore, refused: Int64) {
        self.inner = inner
        self.refused = refused
    }
    func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem] {
        try await inner.claim(owner: owner, kinds: kinds, limit: limit, lease: lease)
    }
    func jobs(ids: [Int64]) async throws -> [JobRecord] { try await inner.jobs(ids: ids) }
    func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> Int {
        if completions.contains(where: { $0.item.id == refused && $0.state == .succeeded }) {
            throw DatabaseError(kind: .query, sqlState: "23505", message: "duplicate key value violates unique constraint")
        }
        return try await inner.complete(completions, owner: owner, writes: writes)
    }
    func extendLeases(owner: String, itemIDs: [Int64], lease: Duration) async throws -> Int {
        try await inner.extendLeases(owner: owner, itemIDs: itemIDs, lease: lease)
    }
    func rescueExpired(limit: Int) async throws -> RescueReport { try await inner.rescueExpired(limit: limit) }
    func pauseJob(id: Int64, reason: String) async throws -> Bool { try await inner.pauseJob(id: id, reason: reason) }
    func completeFinishedJobs() async throws -> [Int64] { try await inner.completeFinishedJobs() }
    func pausedJobs(kinds: [String]) async throws -> [Int64: String] { try await inner.pausedJobs(kinds: kinds) }
    func backlog(kinds: [String]) async throws -> QueueBacklog { try await inner.backlog(kinds: kinds) }
}

@Suite(.timeLimit(.minutes(5))) struct WorkerRecoveryTests {
    @Test func oneRefusedCompletionFailsOnlyItsItem() async {
        let memory = MemoryJobStore()
        memory.addJob(kind: "k", count: 40)
        let store = RefusingStore(inner: memory, refused: 7)
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).runToEnd()
        #expect(report.databaseFailure == nil)
        let items = memory.items
        #expect(items.filter { $0.state == .succeeded }.count == 39)
        #expect(items.first { $0.claimed.id == 7 }?.state == .failed)
        #expect(memory.results[7]?.outcome == .failed)
        #expect(memory.results.count == 40)
    }

    @Test func aResumedJobRunsAgainOnTheWorkerThatPausedIt() async throws {
        let store = MemoryJobStore()
        let jobID = store.addJob(kind: "k", count: 30)
        let fixed = Atomic<Bool>(false)
        let handler = ScriptedHandler(kind: "k") { _ in
            fixed.load(ordering: .relaxed)
                ? .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
                : .pauseJob(reason: "invalid_client")
        }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 4, drain: false),
                            logger: quietLogger())
        async let report = worker.runToEnd()
        try await Poll.until("the job to be paused") { store.job(jobID)?.state == .paused }
        fixed.store(true, ordering: .relaxed)
        store.resumeJob(jobID)
        worker.wake()
        try await Poll.until("every item to succeed after the resume") { store.items.allSatisfy { $0.state == .succeeded } }
        worker.shutdownGracefully()
        let result = await report
        #expect(result.succeeded == 30)
        #expect(store.results.count == 30)
    }

    @Test func itemsDiscardedByRescueMakeTheDrainExitOne() async throws {
        let clock = ManualClock()
        let store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 2, maxAttempts: 1)
        _ = try await store.claim(owner: "dead", kinds: ["k"], limit: 10, lease: .seconds(30))
        clock.advance(by: .seconds(31))
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).runToEnd()
        #expect(report.discarded == 2)
        // What makes the CLI exit 1: discarded items, and nothing paused or unavailable.
        #expect(report.pausedJobs.isEmpty && report.databaseFailure == nil && report.upstreamFailure == nil)
    }
}
