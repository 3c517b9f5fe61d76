import Clocks
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// A drain shared by several processes ends when its last item does: a worker whose only work
/// left is leased by another looks again after `Worker.othersLookAgain`, not at the next poll
/// tick (0.5–1.5 poll intervals), so the last of N processes does not idle up to a second.
@Suite(.timeLimit(.minutes(2))) struct DrainTailTests {
    @Test func aDrainWaitingOnAnotherWorkersItemsEndsSoonAfterTheyFinish() async throws {
        let clock = ManualClock()
        let store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 3)
        let others = try await store.claim(owner: "other-worker", kinds: ["k"], limit: 10, lease: .seconds(60))
        #expect(others.count == 3)
        var config = configuration()
        config.pollInterval = .seconds(10)                      // a poll tick is 5–15 s away
        let handler = ScriptedHandler(kind: "k") { _ in .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil) }
        let intercepting = InterceptingStore(inner: store)
        let worker = Worker(store: intercepting, handlers: [handler], configuration: config, logger: quietLogger(), clock: clock)
        let ended = Atomic<Bool>(false)
        let run = Task {
            let report = await worker.runToEnd()
            ended.store(true, ordering: .sequentiallyConsistent)
            return report
        }
        // The worker found only the other's items left and waits.
        try await Poll.until("the worker's first look at the backlog") {
            intercepting.backlogCalls.load(ordering: .sequentiallyConsistent) > 0
        }
        try await Task.sleep(for: .milliseconds(50))
        // The other worker finishes its items.
        _ = try await store.complete(others.map { Completion(item: $0, kind: "k", state: .succeeded,
                                                              result: ResultRecord(outcome: TestOutcome.ok)) },
                                     owner: "other-worker", writes: .none)
        // Well under half a poll interval of the worker's clock passes, in small steps.
        var advanced: Duration = .zero
        while !ended.load(ordering: .sequentiallyConsistent) && advanced < .seconds(3) {
            clock.advance(by: .milliseconds(50))
            advanced += .milliseconds(50)
            try await Task.sleep(for: .milliseconds(20))
        }
        // The clock stops there; a worker task starved on a loaded machine gets real time to end.
        let realDeadline = ContinuousClock.now + .seconds(30)
        while !ended.load(ordering: .sequentiallyConsistent) && ContinuousClock.now < realDeadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let endedEarly = ended.load(ordering: .sequentiallyConsistent)
        if !endedEarly {
            worker.shutdownGracefully()
            clock.advance(by: .seconds(60))
        }
        let report = await run.value
        #expect(endedEarly, "the drain ended within \(advanced) of the worker's clock after the other worker's items finished")
        #expect(report.succeeded == 0 && store.items.allSatisfy { $0.state == .succeeded })
    }
}
