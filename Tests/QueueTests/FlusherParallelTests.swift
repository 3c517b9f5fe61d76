import Clocks
import Foundation
import Lifecycle
import Postgres
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// A gate for completion statements (`InterceptingStore.gateCompletions`): each statement waits
/// until the test opens it; records each statement's size and how many ran at once.
final class CompletionGate: Sendable {
    let open = Atomic<Bool>(false)
    let running = Atomic<Int>(0)
    let mostAtOnce = Atomic<Int>(0)
    let sizes = Mutex<[Int]>([])

    func pass(_ completions: [Completion]) async {
        sizes.withLock { $0.append(completions.count) }
        let now = running.add(1, ordering: .sequentiallyConsistent).newValue
        while true {
            let most = mostAtOnce.load(ordering: .sequentiallyConsistent)
            if now <= most || mostAtOnce.compareExchange(expected: most, desired: now, ordering: .sequentiallyConsistent).exchanged { break }
        }
        while !open.load(ordering: .sequentiallyConsistent) { try? await Task.sleep(for: .milliseconds(1)) }
        running.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// A store of `jobs` (count, priority) whose completions pass this gate, and their claimed
    /// items (leased, so the memory store accepts their completions), job by job.
    func store(jobs: [(count: Int, priority: Int)]) async throws -> (InterceptingStore, [[ClaimedItem]]) {
        let memory = MemoryJobStore()
        let ids = jobs.map { memory.addJob(kind: "k", count: $0.count, priority: $0.priority) }
        let claimed = try await memory.claim(owner: "w", kinds: ["k"], limit: 10_000, lease: .seconds(60))
        let store = InterceptingStore(inner: memory)
        store.gateCompletions { [self] in await self.pass($0) }
        return (store, ids.map { id in claimed.filter { $0.jobID == id }.sorted { $0.id < $1.id } })
    }
}

func succeeded(_ items: ArraySlice<ClaimedItem>) -> [Completion] {
    items.map { Completion(item: $0, kind: "k", state: .succeeded, result: ResultRecord(outcome: TestOutcome.ok)) }
}

/// The flusher writes a full batch beside the one being written, never more than
/// `Flusher.parallelWrites` at once, and a partial batch waits for the write before it.
@Suite struct FlusherParallelTests {
    @Test func aFullBatchIsWrittenBesideTheOneBeingWrittenAndAPartialOneWaits() async throws {
        let gate = CompletionGate()
        let (store, jobs) = try await gate.store(jobs: [(30, JobPriority.mostUrgent)])
        let items = jobs[0]
        let flusher = Flusher(store: store, owner: "w", writes: ["k": .none], maxItems: 10, interval: .milliseconds(1),
                              closeGrace: .seconds(5), clock: SystemClock(), inFlight: InFlightSet(), logger: quietLogger(),
                              progress: Wakeup(), abort: Latch())
        let calls = { gate.sizes.withLock { $0 } }
        // The first ten are buffered before the flusher runs, so its 1 ms interval cannot cut them
        // into two statements when this thread is preempted between two adds.
        succeeded(items[0..<10]).forEach(flusher.add)
        let run = Task { await flusher.run() }
        try await waitUntil("the first statement") { calls() == [10] }
        // Five more: a partial batch, which waits while the first statement is out ...
        succeeded(items[10..<15]).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        // ... until five more make it full: then it is written beside the first, all ten in one.
        succeeded(items[15..<20]).forEach(flusher.add)
        try await waitUntil("a second statement beside the first") { gate.running.load(ordering: .sequentiallyConsistent) == 2 }
        #expect(calls() == [10, 10], "the five waited for the batch to fill: \(calls())")
        // A third full batch waits for a free slot: never more than two statements at once.
        succeeded(items[20..<30]).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls() == [10, 10] && flusher.unflushed == 30)

        gate.open.store(true, ordering: .sequentiallyConsistent)
        await flusher.waitUntilIdle()
        flusher.close()
        await run.value
        #expect(calls() == [10, 10, 10])
        #expect(gate.mostAtOnce.load(ordering: .sequentiallyConsistent) == Flusher.parallelWrites)
        #expect(flusher.result.accepted[.succeeded] == 30 && flusher.unflushed == 0)
    }
}

/// Bulk completions alone wait for the hold (`bulkInterval`, `holdLimit`); an urgent completion, a
/// full hold or `hurry` writes them at once.
@Suite struct FlusherBulkHoldTests {
    @Test func bulkCompletionsWaitForTheHoldAndGoWithTheFirstUrgentOne() async throws {
        let gate = CompletionGate()
        gate.open.store(true, ordering: .sequentiallyConsistent)
        let (store, jobs) = try await gate.store(jobs: [(3, JobPriority.bulk), (1, JobPriority.mostUrgent), (12, 7)])
        let (ops, signIn, nightly) = (jobs[0], jobs[1], jobs[2])
        // A hold of a minute: nothing but the events below can end it within the test.
        let flusher = Flusher(store: store, owner: "w", writes: ["k": .none], maxItems: 100, interval: .milliseconds(1),
                              bulkInterval: .seconds(60), holdLimit: 10, promptFirst: 0, closeGrace: .seconds(5), clock: SystemClock(),
                              inFlight: InFlightSet(), logger: quietLogger(), progress: Wakeup(), abort: Latch())
        let run = Task { await flusher.run() }
        let calls = { gate.sizes.withLock { $0 } }

        succeeded(ops[...]).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls().isEmpty, "three bulk completions are held")
        // An urgent completion (a sign-in's) is written at once, and takes the held ones along.
        succeeded(signIn[...]).forEach(flusher.add)
        try await waitUntil("the urgent completion's statement") { calls() == [4] }
        // Bulk again: held until the hold is full (holdLimit 10), then written together.
        succeeded(nightly[0..<9]).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls() == [4], "nine bulk completions are held")
        succeeded(nightly[9..<10]).forEach(flusher.add)
        try await waitUntil("the full hold's statement") { calls() == [4, 10] }
        // Two more, then hurry (backpressure, a drain's end): written at once.
        succeeded(nightly[10..<12]).forEach(flusher.add)
        await flusher.waitUntilIdle()
        #expect(calls() == [4, 10, 2])
        flusher.close()
        await run.value
        #expect(flusher.result.accepted[.succeeded] == 16)
    }
}

/// A job's first completions are written as they come, whatever its priority (`promptFirst`), so
/// the safety stop judges its first results early; the rest of a bulk job is held.
@Suite struct FlusherPromptFirstTests {
    @Test func aBulkJobsFirstCompletionsAreNotHeldAndTheRestAre() async throws {
        let gate = CompletionGate()
        gate.open.store(true, ordering: .sequentiallyConsistent)
        let (store, jobs) = try await gate.store(jobs: [(8, JobPriority.bulk)])
        let items = jobs[0]
        let flusher = Flusher(store: store, owner: "w", writes: ["k": .none], maxItems: 100, interval: .milliseconds(1),
                              bulkInterval: .seconds(60), holdLimit: 50, promptFirst: 5, closeGrace: .seconds(5),
                              clock: SystemClock(), inFlight: InFlightSet(), logger: quietLogger(), progress: Wakeup(),
                              abort: Latch())
        let run = Task { await flusher.run() }
        let calls = { gate.sizes.withLock { $0 } }
        // The first five of the job: no hold (a hold of a minute would outlast the test).
        succeeded(items[0..<5]).forEach(flusher.add)
        try await waitUntil("the first five written") { calls().reduce(0, +) == 5 }
        // The sixth onwards: held.
        succeeded(items[5..<8]).forEach(flusher.add)
        try await Task.sleep(for: .milliseconds(100))
        #expect(calls().reduce(0, +) == 5 && flusher.unflushed == 3, "the rest of a bulk job is held: \(calls())")
        await flusher.waitUntilIdle()
        #expect(calls().reduce(0, +) == 8)
        flusher.close()
        await run.value
        #expect(flusher.result.accepted[.succeeded] == 8)
    }
}
