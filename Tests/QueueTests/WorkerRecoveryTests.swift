import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport
@testable import Queue

@Suite(.timeLimit(.minutes(5))) struct WorkerRecoveryTests {
    @Test func oneRefusedCompletionFailsOnlyItsItem() async {
        let memory = MemoryJobStore()
        memory.addJob(kind: "k", count: 40)
        // Refused like a unique-key violation: every completion batch holding item 7's success.
        let store = InterceptingStore(inner: memory, complete: { batch in
            batch.contains { $0.item.id == 7 && $0.state == .succeeded } ? .uniqueViolation : nil
        })
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
        // A lease expired on the last attempt, and the retry budget (0 here) is spent.
        let clock = ManualClock()
        let store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 2, maxAttempts: 1)
        _ = try await store.claim(owner: "dead", kinds: ["k"], limit: 10, lease: .seconds(30))
        clock.advance(by: .seconds(31))
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(retryBudget: .zero),
                                  logger: quietLogger()).runToEnd()
        #expect(report.discarded == 2)
        // What makes the CLI exit 1: discarded items, and nothing paused or unavailable.
        #expect(report.pausedJobs.isEmpty && report.databaseFailure == nil && report.upstreamFailure == nil)
    }
}
