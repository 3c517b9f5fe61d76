import AppleID
import Foundation
import Postgres
import Testing
import TestSupport
@testable import SIWAJobs

/// The shared budget's arithmetic (sql/0013_rate_budget.sql) through `PostgresRateBudgetStore`,
/// with a manual clock as the functions' `p_now`: grants, the bucket's cap, the decrease and pause
/// of a 429 (once per burst), additive recovery up to the knee, the hold, then the ceiling.
@Suite struct RateBudgetSQLTests {
    static let key = RateBudgetKey(teamID: "TEAMA12345", endpoint: .token)
    let policy = RateBudgetPolicy()

    /// Runs `body` on a fresh migrated database with a store timed by a manual clock at real time.
    func withStore(_ body: (PostgresRateBudgetStore, ManualClock, TestDatabase) async throws -> Void) async throws {
        let db = try await TestDatabase.create()
        // A whole millisecond: PostgreSQL keeps microseconds, and a start rounded up by half a
        // microsecond once made "100 ms later" 9.99995 permits (floored to 9).
        let clock = ManualClock(start: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000))
        do {
            try await body(PostgresRateBudgetStore(pool: db.pool, clock: clock), clock, db)
        } catch {
            await db.drop()
            throw error
        }
        await db.drop()
    }

    func rate(_ db: TestDatabase) async throws -> Double {
        try await db.scalar("SELECT rate_rps FROM siwa.rate_budgets WHERE team_id = \(Self.key.teamID)")
    }

    @Test func grantsComeFromABucketHoldingAtMostAWindowsWorth() async throws {
        try await withStore { store, clock, db in
            // A new budget starts at the ceiling with one window's worth (100/s × 200 ms).
            #expect(try await store.grant(Self.key, ceiling: 100, want: 50, policy: policy) == .permits(20, rate: 100))
            // Empty now: the least grant (a quarter window, 5 permits) comes in 50 ms.
            guard case .wait(let wait, 100) = try await store.grant(Self.key, ceiling: 100, want: 50, policy: policy) else {
                Issue.record("expected a wait"); return
            }
            #expect(abs(wait.seconds - 0.05) < 1e-6)
            clock.advance(by: .milliseconds(100))
            #expect(try await store.grant(Self.key, ceiling: 100, want: 50, policy: policy) == .permits(10, rate: 100))
            clock.advance(by: .seconds(10))                     // idle: no more than a window's worth piles up
            #expect(try await store.grant(Self.key, ceiling: 100, want: 50, policy: policy) == .permits(20, rate: 100))
            clock.advance(by: .seconds(1))
            #expect(try await store.grant(Self.key, ceiling: 100, want: 3, policy: policy) == .permits(3, rate: 100))
            let granted: Int = try await db.scalar("SELECT permits_granted::int FROM siwa.rate_budgets")
            #expect(granted == 53)
        }
    }

    @Test func a429LowersTheRateOncePerBurstAndPausesEveryGrant() async throws {
        try await withStore { store, clock, db in
            _ = try await store.grant(Self.key, ceiling: 100, want: 1, policy: policy)
            let first = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(2), policy: policy)
            #expect(first == ThrottleReceipt(rate: 70, pause: .seconds(2), decreased: true))
            clock.advance(by: .milliseconds(500))
            // The same burst: the pause is extended, the rate is not lowered again.
            let second = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(2), policy: policy)
            #expect(second == ThrottleReceipt(rate: 70, pause: .seconds(2), decreased: false))
            clock.advance(by: .milliseconds(1500))
            #expect(try await store.grant(Self.key, ceiling: 100, want: 10, policy: policy) == .paused(.milliseconds(500)))
            clock.advance(by: .milliseconds(500))
            // The pause passed: the bucket was emptied and refills from the pause's end.
            guard case .wait(_, 70) = try await store.grant(Self.key, ceiling: 100, want: 10, policy: policy) else {
                Issue.record("expected an empty bucket at 70/s"); return
            }
            let rows = try await db.pool.query("""
                SELECT ceiling_rps, rate_rps::float8 AS rate, learned_limit_rps::float8 AS learned, count_429, last_429_at
                FROM siwa.rate_budgets_status WHERE team_id = \(Self.key.teamID) AND endpoint = '/auth/token'
                """)
            let row = try #require(rows.first)
            #expect(try row.decode("ceiling_rps", as: Double.self) == 100)
            #expect(try row.decode("rate", as: Double.self) == 70)
            #expect(try row.decode("learned", as: Double.self) == 100)
            #expect(try row.decode("count_429", as: Int.self) == 2)
            // A 429 after the pause is a new signal.
            let third = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)
            #expect(third.decreased && abs(third.rate - 49) < 1e-9)
            #expect(try await rate(db) == third.rate)
        }
    }

    @Test func theRateRecoversAdditivelyToTheKneeHoldsThenReachesTheCeiling() async throws {
        try await withStore { store, clock, db in
            _ = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)   // 100 → 70
            clock.advance(by: .seconds(2))                      // 1 s of pause, then 1 s of recovery: +5
            _ = try await store.grant(Self.key, ceiling: 100, want: 1, policy: policy)
            #expect(abs(try await rate(db) - 75) < 1e-6)
            clock.advance(by: .seconds(100))                    // quick recovery ends at 0.9 × 100
            _ = try await store.grant(Self.key, ceiling: 100, want: 1, policy: policy)
            #expect(abs(try await rate(db) - 90) < 1e-6)
            clock.advance(by: .seconds(150))                    // 253 s after the 429: still held
            _ = try await store.grant(Self.key, ceiling: 100, want: 1, policy: policy)
            #expect(abs(try await rate(db) - 90) < 1e-6)
            clock.advance(by: .seconds(50))                     // 303 s: the hold is over
            _ = try await store.grant(Self.key, ceiling: 100, want: 1, policy: policy)
            #expect(abs(try await rate(db) - 100) < 1e-6)
        }
    }

    @Test func a429AtTheHoldAfterAQuietSpellLowersTheLearnedLimitALittle() async throws {
        try await withStore { store, clock, db in
            func learned() async throws -> Double {
                try await db.scalar("SELECT limit_rps FROM siwa.rate_budgets WHERE team_id = \(Self.key.teamID)")
            }
            _ = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)   // learns 100
            clock.advance(by: .seconds(20))                     // at the hold (90), soon after: the hold is too high
            _ = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)
            #expect(abs(try await learned() - 90) < 1e-6, "learned as met")
            clock.advance(by: .seconds(5))                      // at the new hold (81) soon again: learned as met
            _ = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)
            #expect(abs(try await learned() - 81) < 1e-6)
            _ = try await db.pool.execute("UPDATE siwa.rate_budgets SET limit_rps = 100")
            clock.advance(by: .seconds(60))                     // held at 90 for a long while
            let atHold = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)
            #expect(abs(try await learned() - 97) < 1e-6, "0.97 × 100, not the 90 it met")
            #expect(abs(atHold.rate - 63) < 1e-6)
            clock.advance(by: .seconds(3))                      // 1 s paused, 2 s of recovery: 63 + 10 = 73
            _ = try await store.throttled(Self.key, ceiling: 100, pause: .seconds(1), policy: policy)
            #expect(abs(try await learned() - 73) < 1e-6, "well under the hold (87.3): the limit is lower")
        }
    }

    @Test func theFloorAndALoweredCeilingBoundTheRate() async throws {
        try await withStore { store, clock, db in
            for _ in 0..<20 {                                   // 429s, each after the last pause: never below 1/s
                _ = try await store.throttled(Self.key, ceiling: 10, pause: .milliseconds(10), policy: policy)
                clock.advance(by: .milliseconds(20))
            }
            #expect(try await rate(db) >= 1)
            #expect(try await rate(db) < 1.1)
            let other = RateBudgetKey(teamID: "TEAMB12345", endpoint: .revoke)
            _ = try await store.grant(other, ceiling: 300, want: 1, policy: policy)
            #expect(try await store.grant(other, ceiling: 50, want: 1, policy: policy) == .permits(1, rate: 50))
            let budgets: Int = try await db.scalar("SELECT count(*)::int FROM siwa.rate_budgets")
            #expect(budgets == 2, "one budget per team and endpoint")
        }
    }
}
