import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Queue

@Suite(.timeLimit(.minutes(5))) struct BackoffTests {
    @Test func growsExponentiallyWithinJitterAndCap() {
        let policy = BackoffPolicy(base: .seconds(1), cap: .seconds(60), jitter: 0.2)
        #expect(policy.delay(afterAttempt: 1, retryAfter: nil, random: .fixed(0.5)) == .seconds(1))
        #expect(policy.delay(afterAttempt: 4, retryAfter: nil, random: .fixed(0.5)) == .seconds(8))
        #expect(policy.delay(afterAttempt: 30, retryAfter: nil, random: .fixed(0.5)) == .seconds(60))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, random: .fixed(0)) == .seconds(fractional: 4 * 0.8))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, random: .fixed(0.999999)) < .seconds(fractional: 4 * 1.2))
    }

    @Test func neverEarlierThanRetryAfter() {
        let policy = BackoffPolicy(base: .seconds(1), cap: .seconds(300), jitter: 0.2)
        for r in [0.0, 0.3, 0.99] {
            #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(30), random: .fixed(r)) >= .seconds(30))
        }
    }

    @Test func drawsItsJitterFromTheInjectedSource() {
        // Two draws per delay when Retry-After is given: the exponential factor, then the spread.
        let draws = DrawCounter()
        let policy = BackoffPolicy(base: .seconds(10), cap: .seconds(300), jitter: 0.2)
        let delay = policy.delay(afterAttempt: 1, retryAfter: .seconds(20), random: JitterSource { draws.next() })
        #expect(draws.count == 2)
        #expect(delay == .seconds(fractional: 20 * (1 + 0.2 * 0.5 * 0.5)))
    }
}

/// Returns 0, then 0.5, then 0.5..., counting the draws.
final class DrawCounter: Sendable {
    private let state = Mutex(0)
    func next() -> Double { state.withLock { n in n += 1; return n == 1 ? 0 : 0.5 } }
    var count: Int { state.withLock { $0 } }
}

@Suite(.timeLimit(.minutes(5))) struct LeaseTests {
    @Test func expiredLeaseIsRescuedAndTheLateCompletionIsRefused() async throws {
        let clock = ManualClock()
        let store = MemoryJobStore(clock: clock)
        store.addJob(kind: "k", count: 1)
        let claimed = try await store.claim(owner: "dead", kinds: ["k"], limit: 10, lease: .seconds(30))
        #expect(claimed.count == 1)
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 0, discarded: 0))
        clock.advance(by: .seconds(31))
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 1, discarded: 0))
        let late = Completion(item: claimed[0], kind: "k", state: .succeeded, result: ResultRecord(outcome: TestOutcome.ok))
        #expect(try await store.complete([late], owner: "dead", writes: .none).isEmpty)
        let again = try await store.claim(owner: "alive", kinds: ["k"], limit: 10, lease: .seconds(30))
        #expect(again.first?.attempt == 2)
    }
}
