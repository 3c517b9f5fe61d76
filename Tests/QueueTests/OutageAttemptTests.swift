import Clocks
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// A worker and a store on one manual clock that a background task keeps moving until the run
/// ends, so backoff, retry budgets and drain waits take no real time.
struct ClockedRun {
    let clock = ManualClock()
    let store: MemoryJobStore
    static let start = Date(timeIntervalSince1970: 1_735_689_600)

    init() { store = MemoryJobStore(clock: clock) }

    /// Runs `worker` to its end, moving the clock `step` at a time (at most `limit` of clock time).
    func run(_ handler: ScriptedHandler, _ config: WorkerConfiguration, step: Duration = .milliseconds(250),
             limit: Duration = .seconds(7200)) async throws -> WorkerReport {
        let worker = Worker(store: store, handlers: [handler], configuration: config, logger: quietLogger(),
                            clock: clock, random: .fixed(0.5))
        let run = Task { await worker.runToEnd() }
        let done = Flag(false)
        let watcher = Task { _ = await run.value; done.set(true) }
        while !done.isSet {
            if clock.now.timeIntervalSince(Self.start) > limit.seconds {
                worker.shutdownGracefully()
                throw WaitTimeout(what: "the run to end within \(limit) of clock time")
            }
            clock.advance(by: step)
            try await Task.sleep(for: .milliseconds(1))
        }
        await watcher.value
        return await run.value
    }
}

/// Outages charge no attempts; transient failures retry within a time budget (issue #8).
@Suite struct OutageAttemptTests {
    func drainConfig(concurrency: Int = 8) -> WorkerConfiguration {
        var c = configuration(concurrency: concurrency)
        c.drainHorizon = .seconds(120)
        return c
    }

    @Test func anUnreachableUpstreamChargesNoAttemptAndStopsAnElevenItemDrain() async throws {
        let world = ClockedRun()
        world.store.addJob(kind: "k", count: 11)
        let calls = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            calls.add(1, ordering: .relaxed)
            return .unreachable(error: "transport connectionFailed: curl error 7: Couldn't connect to server")
        }
        let report = try await world.run(handler, drainConfig())
        #expect(report.upstreamFailure?.contains("never reached") == true, "\(report)")
        #expect(report.discarded == 0 && report.failed == 0 && report.retried == 0)
        #expect(report.unreached == calls.load(ordering: .relaxed))
        // Stopped after about two rounds of the job (2 × 11 in a row), not 100 failures.
        #expect(calls.load(ordering: .relaxed) >= 22 && calls.load(ordering: .relaxed) <= 22 + 8)
        #expect(world.store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
        #expect(world.store.results.isEmpty)
    }

    @Test func fiveDrainsAgainstAnUnreachableUpstreamLeaveEveryAttemptUnspent() async throws {
        let world = ClockedRun()
        world.store.addJob(kind: "k", count: 300)
        let handler = ScriptedHandler(kind: "k") { _ in .unreachable(error: "connection refused") }
        for _ in 1...5 {
            let report = try await world.run(handler, drainConfig(concurrency: 32))
            #expect(report.upstreamFailure != nil && report.discarded == 0)
            #expect(world.store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
        }
    }

    @Test func anAnswerInBetweenResetsTheUnreachableCount() async throws {
        let world = ClockedRun()
        world.store.addJob(kind: "k", count: 60)
        // Every third call reaches the upstream: never 10 unreachable calls in a row.
        let calls = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            calls.add(1, ordering: .relaxed).newValue % 3 == 0
                ? .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
                : .unreachable(error: "connection refused")
        }
        let report = try await world.run(handler, drainConfig(concurrency: 1))
        #expect(report.upstreamFailure == nil && report.succeeded == 60 && report.discarded == 0)
        #expect(world.store.items.allSatisfy { $0.state == .succeeded && $0.claimed.attempt == 1 })
    }

    @Test func transientFailuresWithinTheRetryBudgetRetryPastMaxAttempts() async throws {
        let world = ClockedRun()
        world.store.addJob(kind: "k", count: 3, maxAttempts: 5)
        // Each item fails seven times, then succeeds: 7 charged attempts > max 5, within 1 hour.
        let handler = ScriptedHandler(kind: "k") { item in
            item.attempt <= 7
                ? .retry(error: "503", retryAfter: nil, result: ResultRecord(outcome: TestOutcome.discarded, httpStatus: 503))
                : .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
        }
        var config = drainConfig()
        config.drainHorizon = .seconds(600)
        let report = try await world.run(handler, config)
        #expect(report.discarded == 0 && report.succeeded == 3 && report.retried == 21)
        #expect(world.store.items.allSatisfy { $0.state == .succeeded && $0.claimed.attempt == 8 })
    }

    @Test func onceMaxAttemptsAndTheBudgetAreSpentTheNextFailureDiscards() async throws {
        let world = ClockedRun()
        world.store.addJob(kind: "k", count: 1, maxAttempts: 5)
        let handler = ScriptedHandler(kind: "k") { _ in
            .retry(error: "503", retryAfter: nil, result: ResultRecord(outcome: TestOutcome.discarded, httpStatus: 503))
        }
        var config = drainConfig()
        config.retryBudget = .seconds(60)
        // Small steps: the clock moves whether or not the worker keeps up, and attempt 6 (at 31 s)
        // must fail inside the budget; at 25 ms a step it would take over a second of the worker
        // stalled to push it past 60 s.
        let report = try await world.run(handler, config, step: .milliseconds(25))
        // Backoff 1, 2, 4, 8, 16, 32 s: attempt 7 starts 63 s after the first, past the 60 s budget.
        #expect(report.discarded == 1 && report.retried == 6)
        let item = try #require(world.store.items.first)
        #expect(item.state == .discarded && item.claimed.attempt == 7)
        #expect(world.store.results[item.claimed.id]?.outcome == .discarded)
    }

    @Test func aRescueDiscardsOnlyOnceTheBudgetIsSpent() async throws {
        let clock = ManualClock()
        let store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 1, maxAttempts: 1)
        _ = try await store.claim(owner: "dead", kinds: ["k"], limit: 1, lease: .seconds(30))
        clock.advance(by: .seconds(31))
        #expect(try await store.rescueExpired(limit: 10, sparing: nil, retryBudget: .seconds(60))
                == RescueReport(retried: 1, discarded: 0))
        _ = try await store.claim(owner: "dead", kinds: ["k"], limit: 1, lease: .seconds(30))
        #expect(try await store.rescueExpired(limit: 10, sparing: "dead", retryBudget: .seconds(60))
                == RescueReport(retried: 0, discarded: 0), "a live worker's own leases are spared")
        clock.advance(by: .seconds(31))
        #expect(try await store.rescueExpired(limit: 10, sparing: nil, retryBudget: .seconds(60))
                == RescueReport(retried: 0, discarded: 1))
    }

    @Test func aDrainStoppedWithWorkLeftSaysWhatIsLeft() async throws {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 2_000)   // 10 s of work in 4 slots: the stop lands long before
        let started = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { _ in
            started.add(1, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(20))
            return .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
        }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 4), logger: quietLogger())
        let run = Task { await worker.runToEnd() }
        try await waitUntil("the first item to start") { started.load(ordering: .relaxed) > 0 }
        worker.shutdownGracefully()
        let report = await run.value
        #expect(report.stoppedWithWorkLeft?.contains("items left") == true, "\(report)")
        #expect(report.upstreamFailure == nil && report.databaseFailure == nil)
    }

    @Test func aDrainThatFinishesLeavesNothingAndDueWorkOfAnUnavailableKindIsNamed() async throws {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 5)
        let other = store.addJob(kind: "needs-credentials", spec: "{\"team_id\":\"T\"}", count: 3)
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        var config = configuration()
        config.unavailableKinds = ["needs-credentials": "no credentials configured"]
        let report = await Worker(store: store, handlers: [handler], configuration: config, logger: quietLogger()).runToEnd()
        #expect(report.succeeded == 5 && report.stoppedWithWorkLeft == nil)
        #expect(report.unrunnable.map(\.job.id) == [other])
        #expect(report.unrunnable.first?.reason == "no credentials configured")
    }
}
