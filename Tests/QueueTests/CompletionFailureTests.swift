import Clocks
import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// Waits (real time, polling) until `condition` holds; fails naming `what` after `deadline`.
func waitUntil(_ what: String, deadline: Duration = .seconds(20), _ condition: () -> Bool) async throws {
    let start = ContinuousClock.now
    while !condition() {
        if ContinuousClock.now - start > deadline { throw WaitTimeout(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

struct WaitTimeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "gave up waiting for \(what)" }
}

/// A flag a test flips while the worker runs (a lock held, then released).
final class Flag: Sendable {
    private let value: Atomic<Bool>
    init(_ initial: Bool) { value = Atomic(initial) }
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set(_ new: Bool) { value.store(new, ordering: .relaxed) }
}

/// Completion failures are decided by their meaning: only bad data fails an item (issue #8).
@Suite struct CompletionFailureTests {
    @Test func aStatementTimeoutKeepsTheBatchAndFailsNoItem() async throws {
        let memory = MemoryJobStore()
        memory.addJob(kind: "k", count: 40)
        let locked = Flag(true)
        let store = InterceptingStore(inner: memory, complete: { _ in locked.isSet ? .statementTimeout : nil })
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger())
        let run = Task { await worker.runToEnd() }
        try await waitUntil("three refused completion statements") { store.completeCalls.load(ordering: .relaxed) >= 3 }
        locked.set(false)
        let report = await run.value
        #expect(isClean(report), "\(report)")
        #expect(report.succeeded == 40 && report.failed == 0 && report.unwritten == 0)
        #expect(memory.items.allSatisfy { $0.state == .succeeded && $0.claimed.attempt == 1 })
        #expect(memory.results.count == 40 && memory.results.values.allSatisfy { $0.outcome == ResultOutcome(TestOutcome.ok) })
    }

    @Test func closingCountsAreWhatTheDatabaseAcceptedNotWhatHandlersReturned() async throws {
        // Mid-run, the leases of the items this worker holds expire and pass to another worker
        // (as after a long pause): their completions are refused by the lease guard, the items
        // run again, and the report counts each item once.
        let clock = ManualClock()
        let memory = MemoryJobStore(clock: clock)
        memory.addJob(kind: "k", count: 20)
        let calls = Atomic<Int>(0)
        let handler = ScriptedHandler(kind: "k") { item in
            if calls.add(1, ordering: .relaxed).newValue == 3 {
                clock.advance(by: .seconds(31))
                _ = try? await memory.rescueExpired(limit: 100)
            }
            return .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
        }
        let report = await Worker(store: memory, handlers: [handler], configuration: configuration(concurrency: 1),
                                  logger: quietLogger()).runToEnd()
        #expect(report.superseded >= 1, "the test should have taken some leases away")
        #expect(calls.load(ordering: .relaxed) == 20 + report.superseded)
        #expect(report.succeeded == 20, "handlers returned \(calls.load(ordering: .relaxed)) successes")
        #expect(memory.items.filter { $0.state == .succeeded }.count == 20)
    }

    @Test func aMissingTableStopsTheRunWithTheErrorAndFailsNoItem() async throws {
        let memory = MemoryJobStore()
        memory.addJob(kind: "k", count: 200)
        let store = InterceptingStore(inner: memory, complete: { _ in .undefinedTable })
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        // Backpressure bounds what is claimed before the first write fails, whatever the timing:
        // at most 16 unwritten or running plus the ready buffer (C + prefetch = 24), so ≤ 40 of 200.
        // (The default bound, C + 1,024, would let a fast loop claim every item first.)
        var config = configuration()
        config.maxUnflushed = 16
        let report = await Worker(store: store, handlers: [handler], configuration: config, logger: quietLogger()).runToEnd()
        #expect(report.databaseFailure?.meaning == .schemaMissing)
        #expect(report.failed == 0 && report.succeeded == 0 && report.unwritten > 0)
        #expect(memory.results.isEmpty)
        #expect(!memory.items.contains { $0.state == .failed })
        // It stopped early: most items were never claimed.
        #expect(memory.items.filter { $0.state == .available }.count >= 160)
    }

    @Test func aClaimRefusedForLackOfPrivilegeStopsTheRunAtOnce() async throws {
        let memory = MemoryJobStore()
        memory.addJob(kind: "k", count: 10)
        let store = InterceptingStore(inner: memory, claim: {
            DatabaseError(kind: .query, sqlState: "42501", message: "permission denied for table job_items")
        })
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).runToEnd()
        #expect(report.databaseFailure?.meaning == .permission)
        #expect(memory.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
    }

    @Test func whileTheDatabaseRefusesWritesAtMostTheBoundIsHeldThenEverythingIsWritten() async throws {
        let memory = MemoryJobStore()
        memory.addJob(kind: "k", count: 300)
        let locked = Flag(true)
        let store = InterceptingStore(inner: memory, complete: { _ in locked.isSet ? .statementTimeout : nil })
        let calls = Mutex<[Int64: Int]>([:])
        let handler = ScriptedHandler(kind: "k") { item in
            calls.withLock { $0[item.id, default: 0] += 1 }
            return .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
        }
        var config = configuration(concurrency: 8)
        config.maxUnflushed = 16
        let worker = Worker(store: store, handlers: [handler], configuration: config, logger: quietLogger())
        let run = Task { await worker.runToEnd() }
        let made = { calls.withLock { $0.values.reduce(0, +) } }
        try await waitUntil("16 calls made while writes are refused") { made() >= 16 }
        let attempts = store.completeCalls.load(ordering: .relaxed)
        try await waitUntil("three more refused completion statements") {
            store.completeCalls.load(ordering: .relaxed) >= attempts + 3
        }
        #expect(made() == 16, "calls made while nothing could be written: \(made())")
        locked.set(false)
        let report = await run.value
        #expect(isClean(report) && report.succeeded == 300 && report.unwritten == 0)
        #expect(report.peakUnflushed <= 16)
        #expect(calls.withLock { $0.count == 300 && $0.values.allSatisfy { $0 == 1 } })
    }

    @Test func completionsSurviveAnOutageFarLongerThanTwoMinutes() async throws {
        let clock = ManualClock()
        let memory = MemoryJobStore(clock: clock)
        memory.addJob(kind: "k", count: 30)
        let down = Flag(true)
        let store = InterceptingStore(inner: memory, complete: { _ in
            down.isSet ? DatabaseError(kind: .connection, message: "server closed the connection unexpectedly",
                                       connectionWasLost: true) : nil
        })
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger(),
                            clock: clock, random: .fixed(0.5))
        let run = Task { await worker.runToEnd() }
        // Ten minutes of outage on the worker's clock.
        try await waitUntil("completions to be retried for ten minutes") {
            clock.advance(by: .seconds(2))
            return clock.now.timeIntervalSince(Date(timeIntervalSince1970: 1_735_689_600)) >= 600
        }
        #expect(store.completeCalls.load(ordering: .relaxed) > 10)
        #expect(memory.results.isEmpty)
        down.set(false)
        let finished = Flag(false)
        let advancing = Task {
            while !finished.isSet {
                clock.advance(by: .seconds(1))
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        let report = await run.value
        finished.set(true)
        await advancing.value
        #expect(report.succeeded == 30 && report.unwritten == 0 && report.databaseFailure == nil)
        #expect(memory.items.allSatisfy { $0.state == .succeeded })
    }
}
