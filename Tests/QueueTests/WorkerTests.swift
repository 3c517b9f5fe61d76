import Clocks
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// Outcome codes of the scripted test kind.
enum TestOutcome: String, OutcomeCode {
    case ok, discarded
}

/// A job kind scripted per test: `behaviour(item)` decides each outcome.
struct ScriptedHandler: JobHandler {
    let kind: String
    let behaviour: @Sendable (ClaimedItem) async -> ItemOutcome

    func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        items.map { item in { await behaviour(item) } }
    }
}

func quietLogger() -> Logger { Logger(label: "test", minimum: .error, json: true, sink: MemoryLogSink()) }

func configuration(concurrency: Int = 8, drain: Bool = true, retryBudget: Duration = .seconds(3600)) -> WorkerConfiguration {
    WorkerConfiguration(workerID: "test-worker", concurrency: concurrency, claimBatch: 50, lease: .seconds(30),
                        pollInterval: .milliseconds(50), flushMaxItems: 20, flushInterval: .milliseconds(2),
                        shutdownGrace: .seconds(5), drain: drain, drainHorizon: .zero, retryBudget: retryBudget)
}

/// The report of a run in which nothing failed, paused or was left over (the CLI's exit 0).
func isClean(_ report: WorkerReport) -> Bool {
    report.failed == 0 && report.discarded == 0 && report.pausedJobs.isEmpty && report.leftPending == 0
        && report.databaseFailure == nil && report.upstreamFailure == nil
}

extension Worker {
    /// Runs the worker to its end and returns its report.
    func runToEnd() async -> WorkerReport {
        await run()
        return lastReport ?? WorkerReport()
    }
}

@Suite(.timeLimit(.minutes(5))) struct WorkerTests {
    @Test func drainsEveryItemExactlyOnce() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 500)
        let calls = Mutex<[Int64: Int]>([:])
        let handler = ScriptedHandler(kind: "k") { item in
            calls.withLock { $0[item.id, default: 0] += 1 }
            try? await Task.sleep(for: .microseconds(Int.random(in: 0...500)))
            return .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: AuditRecord(action: "a"), effect: nil)
        }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).runToEnd()
        #expect(isClean(report))
        #expect(report.succeeded == 500)
        #expect(store.results.count == 500)
        #expect(store.auditCount == 500)
        #expect(store.items.allSatisfy { $0.state == .succeeded && $0.claimed.attempt == 1 })
        #expect(calls.withLock { $0.values.allSatisfy { $0 == 1 } && $0.count == 500 })
    }

    @Test func retryWaitsAtLeastRetryAfter() async {
        // The store and the worker share a manual clock that never moves: each retry is scheduled
        // exactly its backoff after the failure, and the drain ends without waiting on real time.
        let clock = ManualClock()
        let store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 3)
        let handler = ScriptedHandler(kind: "k") { _ in
            .retry(error: "429", retryAfter: .seconds(7), result: ResultRecord(outcome: TestOutcome.discarded, httpStatus: 429))
        }
        let start = clock.now
        // random() = 0 gives the smallest jittered delay: the Retry-After floor must still hold.
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger(),
                            clock: clock, random: .fixed(0))
        let report = await worker.runToEnd()
        #expect(report.retried == 3)
        #expect(report.leftPending > 0 && report.failed == 0 && report.discarded == 0)   // retries beyond the horizon
        #expect(store.items.count == 3)
        for item in store.items {
            #expect(item.state == .available)
            #expect(item.runAt.timeIntervalSince(start) == 7)
            #expect(item.claimed.attempt == 1)
        }
    }

    @Test func exhaustedAttemptsAreDiscardedWithOneResultWhenTheRetryBudgetIsZero() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 4, maxAttempts: 1)
        let handler = ScriptedHandler(kind: "k") { _ in
            .retry(error: "503", retryAfter: nil, result: ResultRecord(outcome: TestOutcome.discarded, httpStatus: 503))
        }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(retryBudget: .zero),
                                  logger: quietLogger()).runToEnd()
        #expect(report.discarded == 4 && report.pausedJobs.isEmpty && report.databaseFailure == nil)
        #expect(store.items.allSatisfy { $0.state == .discarded })
        #expect(store.results.values.allSatisfy { $0.outcome == .discarded && $0.httpStatus == 503 })
        #expect(store.results.count == 4)
    }

    @Test func configurationErrorPausesTheJobWithoutBurningItems() async {
        let store = MemoryJobStore()
        let jobID = store.addJob(kind: "k", count: 400)
        let calls = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            calls.add(1, ordering: .relaxed)
            return .pauseJob(reason: "invalid_client: check the key")
        }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 4),
                                  logger: quietLogger()).runToEnd()
        #expect(report.pausedJobs == [jobID: "invalid_client: check the key"])
        #expect(store.job(jobID)?.state == .paused)
        #expect(calls.load(ordering: .relaxed) <= 4 + 50)   // at most what was in flight or claimed, never all 400
        #expect(store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
        #expect(store.results.isEmpty)
    }

    @Test func stopLetsInFlightItemsFinish() async throws {
        let store = MemoryJobStore()
        // 1,000 items of 100 ms in 5 slots take 20 s: the stop lands long before, however the
        // test's own task is scheduled.
        store.addJob(kind: "k", count: 1_000)
        let started = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            started.add(1, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(100))
            return .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
        }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 5, drain: false),
                            logger: quietLogger())
        async let report = worker.runToEnd()
        try await Poll.until("the first item to start") { started.load(ordering: .relaxed) > 0 }
        worker.shutdownGracefully()
        let result = await report
        #expect(isClean(result))
        // Items claimed ahead but not started are released uncharged; started ones finish.
        #expect(store.items.filter { $0.state == .running }.isEmpty)
        let done = store.items.filter { $0.state == .succeeded }.count
        #expect(done == result.succeeded && done > 0 && done < 1_000)
        #expect(store.items.filter { $0.state == .available }.allSatisfy { $0.claimed.attempt == 0 })
    }
}
