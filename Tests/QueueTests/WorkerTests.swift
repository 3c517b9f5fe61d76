import Foundation
import Synchronization
import Testing
@testable import Queue

/// A job kind scripted per test: `behaviour(item)` decides each outcome.
struct ScriptedHandler: JobHandler {
    let kind: String
    var effectSQL: String? { nil }
    let behaviour: @Sendable (ClaimedItem) async -> ItemOutcome

    func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        items.map { item in { await behaviour(item) } }
    }
}

func quietLogger() -> Logger { Logger(label: "test", minimum: .error, json: true, sink: LogSink()) }

func configuration(concurrency: Int = 8, drain: Bool = true) -> WorkerConfiguration {
    WorkerConfiguration(workerID: "test-worker", concurrency: concurrency, claimBatch: 50, leaseSeconds: 30,
                        pollSeconds: 0.05, flushMaxItems: 20, flushIntervalMilliseconds: 2, shutdownGraceSeconds: 5,
                        drain: drain, drainHorizonSeconds: 0)
}

@Suite struct WorkerTests {
    @Test func drainsEveryItemExactlyOnce() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 500)
        let calls = Mutex<[Int64: Int]>([:])
        let handler = ScriptedHandler(kind: "k") { item in
            calls.withLock { $0[item.id, default: 0] += 1 }
            try? await Task.sleep(for: .microseconds(Int.random(in: 0...500)))
            return .succeeded(ResultRecord(outcome: "ok"), audit: AuditRecord(action: "a"), effect: nil)
        }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).run()
        #expect(report.nothingWentWrong)
        #expect(report.succeeded == 500)
        #expect(store.results.count == 500)
        #expect(store.auditCount == 500)
        #expect(store.items.allSatisfy { $0.state == .succeeded && $0.claimed.attempt == 1 })
        #expect(calls.withLock { $0.values.allSatisfy { $0 == 1 } && $0.count == 500 })
    }

    @Test func retryWaitsAtLeastRetryAfter() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 3)
        let handler = ScriptedHandler(kind: "k") { _ in
            .retry(error: "429", retryAfterSeconds: 7, result: ResultRecord(outcome: "discarded", httpStatus: 429))
        }
        let before = Date()
        // random() = 0 gives the smallest jittered delay: the Retry-After floor must still hold.
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger(), random: { 0 })
        let report = await worker.run()
        #expect(report.retried == 3)
        // Retries left beyond the drain horizon (a temporary failure), nothing else.
        #expect(report.noPauseOrOutage && report.failed == 0 && report.discarded == 0 && report.leftPending > 0)
        for item in store.items {
            #expect(item.state == .available)
            #expect(item.runAt.timeIntervalSince(before) >= 7)
            #expect(item.claimed.attempt == 1)
        }
    }

    @Test func exhaustedAttemptsAreDiscardedWithOneResult() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 4, maxAttempts: 1)
        let handler = ScriptedHandler(kind: "k") { _ in
            .retry(error: "503", retryAfterSeconds: nil, result: ResultRecord(outcome: "discarded", httpStatus: 503))
        }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).run()
        #expect(report.noPauseOrOutage && report.discarded == 4)
        #expect(store.items.allSatisfy { $0.state == .discarded })
        #expect(store.results.values.allSatisfy { $0.outcome == "discarded" && $0.httpStatus == 503 })
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
                                  logger: quietLogger()).run()
        #expect(report.pausedJobs.count == 1)
        #expect(report.pausedJobs[jobID] == "invalid_client: check the key")
        #expect(store.job(jobID)?.state == "paused")
        #expect(calls.load(ordering: .relaxed) <= 4 + 50)   // at most what was in flight or claimed, never all 400
        #expect(store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
        #expect(store.results.isEmpty)
    }

    @Test func stopLetsInFlightItemsFinish() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 100)
        let started = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            started.add(1, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(100))
            return .succeeded(ResultRecord(outcome: "ok"), audit: nil, effect: nil)
        }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 5, drain: false),
                            logger: quietLogger())
        async let report = worker.run()
        while started.load(ordering: .relaxed) == 0 { try? await Task.sleep(for: .milliseconds(5)) }
        worker.requestStop()
        let result = await report
        #expect(result.nothingWentWrong)
        // Items claimed ahead but not started are released uncharged; started ones finish.
        #expect(store.items.filter { $0.state == .running }.isEmpty)
        let done = store.items.filter { $0.state == .succeeded }.count
        #expect(done == result.succeeded && done > 0 && done < 100)
        #expect(store.items.filter { $0.state == .available }.allSatisfy { $0.claimed.attempt == 0 })
    }

    @Test func graceExpiryReleasesItemsUncharged() async {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 3)
        let started = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            started.add(1, ordering: .relaxed)
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                return .released
            }
            return .succeeded(ResultRecord(outcome: "ok"), audit: nil, effect: nil)
        }
        var config = configuration(concurrency: 3, drain: false)
        config.shutdownGraceSeconds = 0.1
        let worker = Worker(store: store, handlers: [handler], configuration: config, logger: quietLogger())
        async let report = worker.run()
        while started.load(ordering: .relaxed) < 3 { try? await Task.sleep(for: .milliseconds(5)) }
        worker.requestStop()
        let result = await report
        #expect(result.released == 3)
        #expect(store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
        #expect(store.results.isEmpty)
    }
}
