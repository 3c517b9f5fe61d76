import Clocks
import Foundation
import Lifecycle
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// An item that runs until its task is cancelled, then reports `.released` (as kinds do for a
/// cancelled Apple call).
func blockUntilCancelled(_ started: StartCounter) -> ScriptedHandler {
    ScriptedHandler(kind: "k") { _ in
        started.count.add(1, ordering: .relaxed)
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
        return .released
    }
}

/// Three items that block until cancelled, on a worker and store that share a manual clock.
struct BlockedWorld {
    let clock = ManualClock()
    let store: MemoryJobStore
    let started = StartCounter()
    let worker: Worker

    init(grace: Duration) {
        store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 3)
        var config = configuration(concurrency: 3, drain: false)
        config.shutdownGrace = grace
        worker = Worker(store: store, handlers: [blockUntilCancelled(started)], configuration: config,
                        logger: quietLogger(), clock: clock)
    }

    func waitUntilAllStarted() async throws {
        try await Poll.until("all three items to start") { started.count.load(ordering: .relaxed) >= 3 }
    }
}

@Suite(.timeLimit(.minutes(5))) struct WorkerShutdownTests {
    @Test func graceExpiryReleasesItemsUncharged() async throws {
        // The grace period runs on a manual clock: it ends when the test moves the clock past it.
        let world = BlockedWorld(grace: .seconds(10))
        let run = Task { await world.worker.runToEnd() }
        try await world.waitUntilAllStarted()
        world.worker.shutdownGracefully()
        // Short of the grace period nothing is cancelled, however long the test waits.
        world.clock.advance(by: .seconds(9))
        try await Task.sleep(for: .milliseconds(50))
        #expect(world.store.items.allSatisfy { $0.state == .running })
        try await Poll.until("every item released once the grace period is over") {
            if world.store.items.allSatisfy({ $0.state == .available }) { return true }
            world.clock.advance(by: .seconds(1))
            return false
        }
        let result = await run.value
        #expect(result.released == 3)
        #expect(world.store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
        #expect(world.store.results.isEmpty)
    }

    @Test func aCancelledRunEndsTheGraceAtOnceAndStillReleasesItsItems() async throws {
        // The grace period is an hour on a clock that never moves: only cancellation can end it.
        let world = BlockedWorld(grace: .seconds(3600))
        let run = Task { await world.worker.run() }
        try await world.waitUntilAllStarted()
        run.cancel()
        await run.value
        // The releases were written although the caller's task was cancelled.
        #expect(world.worker.lastReport?.released == 3)
        #expect(world.store.items.allSatisfy { $0.state == .available && $0.claimed.attempt == 0 })
    }

    @Test func aServiceGroupStopsTheWorkerGracefully() async throws {
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 20)
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 4, drain: false),
                            logger: quietLogger())
        // A second service that ends once every item is done: the group then stops the worker.
        let watcher = UntilDone { store.items.allSatisfy { $0.state == .succeeded } }
        let ending = try await ServiceGroup(services: [worker, watcher],
                                            configuration: .init(signals: [], gracePeriod: .seconds(30))).run()
        #expect(ending == .finished)
        #expect(worker.lastReport?.succeeded == 20)
        #expect(store.results.count == 20)
    }

    @Test func anEffectThatDoesNotEncodeFailsOnlyItsItem() async {
        struct Unencodable: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "not encodable"))
            }
        }
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 10)
        let handler = ScriptedHandler(kind: "k") { item in
            .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil,
                       effect: item.id == 5 ? EffectPayload(Unencodable()) : EffectPayload(["n": item.id]))
        }
        let report = await Worker(store: store, handlers: [handler], configuration: configuration(), logger: quietLogger()).runToEnd()
        #expect(report.succeeded == 9 && report.failed == 1)
        #expect(store.results[5]?.outcome == .failed)
        #expect(store.items.first { $0.claimed.id == 5 }?.state == .failed)
    }
}

/// How many items have started.
final class StartCounter: Sendable {
    let count = Atomic<Int>(0)
}

/// A service that polls `done` and returns once it holds; past 60 s it throws `PollTimeout`
/// (ending the group) instead of waiting forever.
struct UntilDone: Service {
    let done: @Sendable () -> Bool
    func run() async throws {
        try await Poll.until("every item done") { done() }
    }
}
