import Clocks
import Foundation
import Lifecycle
import Postgres
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// A store whose completion statements wait at a gate until the test opens it, recording each
/// statement's size and how many ran at once. Everything else goes to a `MemoryJobStore`.
final class GatedCompletionStore: JobStore {
    let inner = MemoryJobStore()
    let gateOpen = Atomic<Bool>(false)
    let running = Atomic<Int>(0)
    let mostAtOnce = Atomic<Int>(0)
    let sizes = Mutex<[Int]>([])

    func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int] {
        sizes.withLock { $0.append(completions.count) }
        let now = running.add(1, ordering: .sequentiallyConsistent).newValue
        while true {
            let most = mostAtOnce.load(ordering: .sequentiallyConsistent)
            if now <= most || mostAtOnce.compareExchange(expected: most, desired: now, ordering: .sequentiallyConsistent).exchanged { break }
        }
        while !gateOpen.load(ordering: .sequentiallyConsistent) { try? await Task.sleep(for: .milliseconds(1)) }
        running.subtract(1, ordering: .sequentiallyConsistent)
        return Dictionary(uniqueKeysWithValues: completions.map { ($0.item.id, $0.item.attempt) })
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

/// The flusher writes a full batch beside the one being written, never more than
/// `Flusher.parallelWrites` at once, and a partial batch waits for the write before it.
@Suite struct FlusherParallelTests {
    static func completions(_ ids: ClosedRange<Int64>) -> [Completion] {
        ids.map { id in
            Completion(item: ClaimedItem(id: id, jobID: 1, accountID: nil, payload: nil, attempt: 1, maxAttempts: 3),
                       kind: "k", state: .succeeded, result: ResultRecord(outcome: TestOutcome.ok))
        }
    }

    @Test func aFullBatchIsWrittenBesideTheOneBeingWrittenAndAPartialOneWaits() async throws {
        let store = GatedCompletionStore()
        let flusher = Flusher(store: store, owner: "w", writes: ["k": .none], maxItems: 10, interval: .milliseconds(1),
                              closeGrace: .seconds(5), clock: SystemClock(), inFlight: InFlightSet(), logger: quietLogger(),
                              progress: Wakeup(), abort: Latch())
        let run = Task { await flusher.run() }
        let calls = { store.sizes.withLock { $0 } }

        Self.completions(1...10).forEach(flusher.add)
        try await waitUntil("the first statement") { calls() == [10] }
        // Five more: a partial batch, which waits while the first statement is out ...
        Self.completions(11...15).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        // ... until five more make it full: then it is written beside the first, all ten in one.
        Self.completions(16...20).forEach(flusher.add)
        try await waitUntil("a second statement beside the first") { store.running.load(ordering: .sequentiallyConsistent) == 2 }
        #expect(calls() == [10, 10], "the five waited for the batch to fill: \(calls())")
        // A third full batch waits for a free slot: never more than two statements at once.
        Self.completions(21...30).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls() == [10, 10] && flusher.unflushed == 30)

        store.gateOpen.store(true, ordering: .sequentiallyConsistent)
        await flusher.waitUntilIdle()
        flusher.close()
        await run.value
        #expect(calls() == [10, 10, 10])
        #expect(store.mostAtOnce.load(ordering: .sequentiallyConsistent) == Flusher.parallelWrites)
        #expect(flusher.result.accepted[.succeeded] == 30 && flusher.unflushed == 0)
    }
}

/// Bulk completions alone wait for the hold (`bulkInterval`, `holdLimit`); an urgent completion, a
/// full hold or `hurry` writes them at once.
@Suite struct FlusherBulkHoldTests {
    static func completions(_ ids: ClosedRange<Int64>, priority: Int) -> [Completion] {
        ids.map { id in
            Completion(item: ClaimedItem(id: id, jobID: 1, accountID: nil, payload: nil, attempt: 1, maxAttempts: 3,
                                         priority: priority),
                       kind: "k", state: .succeeded, result: ResultRecord(outcome: TestOutcome.ok))
        }
    }

    @Test func bulkCompletionsWaitForTheHoldAndGoWithTheFirstUrgentOne() async throws {
        let store = GatedCompletionStore()
        store.gateOpen.store(true, ordering: .sequentiallyConsistent)
        // A hold of a minute: nothing but the events below can end it within the test.
        let flusher = Flusher(store: store, owner: "w", writes: ["k": .none], maxItems: 100, interval: .milliseconds(1),
                              bulkInterval: .seconds(60), holdLimit: 10, closeGrace: .seconds(5), clock: SystemClock(),
                              inFlight: InFlightSet(), logger: quietLogger(), progress: Wakeup(), abort: Latch())
        let run = Task { await flusher.run() }
        let calls = { store.sizes.withLock { $0 } }

        Self.completions(1...3, priority: JobPriority.bulk).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls().isEmpty, "three bulk completions are held")
        // An urgent completion (a sign-in's) is written at once, and takes the held ones along.
        Self.completions(4...4, priority: JobPriority.mostUrgent).forEach(flusher.add)
        try await waitUntil("the urgent completion's statement") { calls() == [4] }
        // Bulk again: held until the hold is full (holdLimit 10), then written together.
        Self.completions(5...13, priority: 7).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls() == [4], "nine bulk completions are held")
        Self.completions(14...14, priority: 7).forEach(flusher.add)
        try await waitUntil("the full hold's statement") { calls() == [4, 10] }
        // Two more, then hurry (backpressure, a drain's end): written at once.
        Self.completions(15...16, priority: 7).forEach(flusher.add)
        await flusher.waitUntilIdle()
        #expect(calls() == [4, 10, 2])
        flusher.close()
        await run.value
        #expect(flusher.result.accepted[.succeeded] == 16)
    }
}
