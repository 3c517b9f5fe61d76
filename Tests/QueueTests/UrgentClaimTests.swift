import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Queue

/// A NOTIFY while a claim is running claims again beside it: an urgent item (a sign-in) does not
/// wait for a slow claim of bulk work to come back.
@Suite(.timeLimit(.minutes(2))) struct UrgentClaimTests {
    @Test func anUrgentItemRunsWhileASlowClaimIsStillOut() async throws {
        let memory = MemoryJobStore()
        let bulk = memory.addJob(kind: "k", count: 600, priority: 7)
        let store = InterceptingStore(inner: memory)
        let finished = Mutex<[Int64]>([])
        let handler = ScriptedHandler(kind: "k") { item in
            finished.withLock { $0.append(item.jobID) }
            return .succeeded(ResultRecord(outcome: TestOutcome.ok), audit: nil, effect: nil)
        }
        let worker = Worker(store: store, handlers: [handler], configuration: configuration(concurrency: 4, drain: false),
                            logger: quietLogger())
        async let report = worker.runToEnd()
        try await Poll.until("bulk items running") { finished.withLock { $0.count } >= 20 }
        store.hold.arm()
        try await Poll.until("a claim held") { store.hold.isHolding }
        let urgent = memory.addJob(kind: "k", count: 1, priority: JobPriority.mostUrgent)
        worker.wake()
        let urgentDone = (try? await Poll.until("the urgent item done while the other claim is out", timeout: .seconds(20)) {
            finished.withLock { $0.contains(urgent) }
        }) != nil
        let stillOut = store.hold.isHolding
        store.hold.release()
        #expect(urgentDone, "the urgent item waited for the slow claim")
        #expect(stillOut, "the slow claim was still out when the urgent item finished")
        try await Poll.until("every item done") { memory.items.allSatisfy { $0.state == .succeeded } }
        worker.shutdownGracefully()
        let result = await report
        #expect(result.succeeded == 601 && result.databaseFailure == nil)
        #expect(memory.results.count == 601 && memory.items.filter { $0.claimed.jobID == bulk }.count == 600)
    }
}
