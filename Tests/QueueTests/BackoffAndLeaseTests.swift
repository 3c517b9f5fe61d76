import Foundation
import Synchronization
import Testing
@testable import Queue

@Suite struct BackoffTests {
    @Test func growsExponentiallyWithinJitterAndCap() {
        let policy = BackoffPolicy(baseSeconds: 1, capSeconds: 60, jitter: 0.2)
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: nil, random: { 0.5 }) == 1)
        #expect(policy.delay(afterAttempt: 4, retryAfterSeconds: nil, random: { 0.5 }) == 8)
        #expect(policy.delay(afterAttempt: 30, retryAfterSeconds: nil, random: { 0.5 }) == 60)
        #expect(policy.delay(afterAttempt: 3, retryAfterSeconds: nil, random: { 0 }) == 4 * 0.8)
        #expect(policy.delay(afterAttempt: 3, retryAfterSeconds: nil, random: { 0.999999 }) < 4 * 1.2)
    }

    @Test func neverEarlierThanRetryAfter() {
        let policy = BackoffPolicy(baseSeconds: 1, capSeconds: 300, jitter: 0.2)
        for r in [0.0, 0.3, 0.99] {
            #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: 30, random: { r }) >= 30)
        }
    }
}

final class ManualClock: Sendable {
    private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    func advance(_ seconds: Double) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var date: Date { now.withLock { $0 } }
}

@Suite struct LeaseTests {
    @Test func expiredLeaseIsRescuedAndTheLateCompletionIsRefused() async throws {
        let clock = ManualClock()
        let store = MemoryJobStore(clock: { clock.date })
        store.addJob(kind: "k", count: 1)
        let claimed = try await store.claim(owner: "dead", kinds: ["k"], limit: 10, leaseSeconds: 30)
        #expect(claimed.count == 1)
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 0, discarded: 0))
        clock.advance(31)
        #expect(try await store.rescueExpired(limit: 10) == RescueReport(retried: 1, discarded: 0))
        let late = Completion(item: claimed[0], kind: "k", state: .succeeded, result: ResultRecord(outcome: "ok"))
        #expect(try await store.complete([late], owner: "dead", effectSQL: nil) == 0)
        let again = try await store.claim(owner: "alive", kinds: ["k"], limit: 10, leaseSeconds: 30)
        #expect(again.first?.attempt == 2)
    }
}
