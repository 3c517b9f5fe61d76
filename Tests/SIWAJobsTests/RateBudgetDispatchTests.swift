import AppleID
import Foundation
import Queue
import Testing
import TestSupport
@testable import SIWAJobs

/// The local side of the rate budget, on a manual clock and a scripted store: permits spaced over
/// the grant window, expired grants dropped, pauses (ours and the team's) and waits that end at
/// once on cancellation or stop. Each wait for the dispatcher has a deadline; no timing is asserted.
@Suite struct RateBudgetDispatchTests {
    @Test func permitsOfAGrantAreSpacedEvenlyOverTheWindow() async throws {
        let clock = ManualClock()
        // The first answer is a short wait, so that all four are waiting when the grant is asked for
        // (the tasks start in any order; the dispatcher asks as soon as one waits).
        let store = ScriptedBudgetStore([.success(.wait(.milliseconds(10), rate: 20)), .success(.permits(4, rate: 20))])
        let budget = RateBudget.testing(store, clock: clock, policy: RateBudgetPolicy(probes: false))   // RateBudgetProbeTests
        let admissions = Admissions()
        let tasks = (0..<4).map { _ in admissions.admit(budget) }
        try await until("four waiting, the dispatcher asleep") { budget.waiting(.token) == 4 && clock.sleeperCount >= 1 }
        clock.advance(by: .milliseconds(12))                    // past the jittered 10–12 ms wait
        try await until("the first permit") { admissions.admitted == 1 && clock.sleeperCount >= 1 }
        #expect(store.wants.count == 2 && store.wants.last == 4, "asked for the four waiting, within a window's worth at 20/s")
        for expected in 2...4 {
            #expect(admissions.admitted == expected - 1, "no permit before its turn")
            clock.advance(by: .milliseconds(50))                // 200 ms / 4 permits
            try await until("permit \(expected)") { admissions.admitted == expected }
        }
        for task in tasks { await task.value }
        await budget.shutdown()
    }

    @Test func anExpiredGrantIsNotHonoured() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.permits(5, rate: 20))])   // then: wait an hour
        let budget = RateBudget.testing(store, clock: clock, policy: RateBudgetPolicy(probes: false))
        let admissions = Admissions()
        await admissions.admit(budget).value
        #expect(admissions.admitted == 1)
        clock.advance(by: .milliseconds(301))                  // past the 300 ms lifetime; 4 permits left
        let late = admissions.admit(budget)
        try await until("a new grant asked for") { store.wants.count == 2 }
        try await until("the dispatcher waiting on the store's answer") { clock.sleeperCount >= 1 }
        #expect(admissions.admitted == 1, "the expired grant's 4 permits were dropped")
        late.cancel()
        await late.value
        #expect(admissions.errors.count == 1 && admissions.errors[0].isCancellation)
        await budget.shutdown()
    }

    @Test func a429PausesThisProcessAtOnceDropsTheGrantAndTellsTheStore() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.permits(10, rate: 20)), .success(.permits(3, rate: 14))])
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        await admissions.admit(budget).value
        await budget.observe(.token, status: 429, retryAfter: .seconds(2))
        #expect(store.pauses == [.seconds(2)])
        clock.advance(by: .milliseconds(100))                  // a permit of the first grant would be due
        let waiting = admissions.admit(budget)
        try await until("the dispatcher paused") { clock.sleeperCount >= 1 }
        clock.advance(by: .milliseconds(1800))                 // 1.9 s of the 2 s pause
        try await until("the dispatcher paused again") { clock.sleeperCount >= 1 }
        #expect(admissions.admitted == 1 && store.wants.count == 1, "nothing during the pause, the old grant dropped")
        clock.advance(by: .milliseconds(200))
        await waiting.value
        #expect(admissions.admitted == 2 && store.wants.count == 2, "served from a new grant after the pause")
        await budget.shutdown()
    }

    @Test func aPauseOfTheTeamReadAtAGrantPausesThisProcessToo() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.paused(.seconds(3))), .success(.permits(2, rate: 20))])
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        let task = admissions.admit(budget)
        try await until("the team's pause read") { store.wants.count == 1 && clock.sleeperCount >= 1 }
        clock.advance(by: .milliseconds(2900))
        try await until("the dispatcher still paused") { clock.sleeperCount >= 1 }
        #expect(store.wants.count == 1 && admissions.admitted == 0, "no grant asked for while the team is paused")
        clock.advance(by: .milliseconds(200))
        await task.value
        #expect(admissions.admitted == 1 && store.wants.count == 2)
        await budget.shutdown()
    }

    @Test func stopEndsEveryWaitAtOnceAndRefusesLaterOnes() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([])                    // the bucket stays empty for an hour
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        let tasks = (0..<3).map { _ in admissions.admit(budget) }
        // The dispatcher asked the store (for 1 to 3 permits, depending on how many had arrived) and
        // now sleeps on the empty bucket; any admission not yet waiting meets the stop instead.
        try await until("the dispatcher sleeping on an empty bucket") { !store.wants.isEmpty && clock.sleeperCount >= 1 }
        #expect(store.wants.reduce(0, +) <= 3)
        budget.stop()
        for task in tasks { await task.value }
        await admissions.admit(budget).value
        #expect(admissions.admitted == 0)
        #expect(admissions.errors.count == 4 && admissions.errors.allSatisfy(\.isCancellation),
                "released, never sent: \(admissions.errors)")
        await budget.shutdown()
    }

    @Test func storeFailuresInARowFailTheWaitersAsTransient() async throws {
        let clock = ManualClock()
        let failure = Result<RateGrant, ScriptedBudgetStore.Failure>.failure(.init())
        let store = ScriptedBudgetStore([failure, failure, failure])
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        let task = admissions.admit(budget)
        for round in 1...2 {
            try await until("failure \(round) backing off") { store.wants.count == round && clock.sleeperCount >= 1 }
            clock.advance(by: .seconds(1))
        }
        await task.value
        #expect(store.wants.count == 3)
        let error = try #require(admissions.errors.first)
        #expect(error.errorClass == .transient && !error.isCancellation)
        #expect(error.detail.contains("rate budget") && error.detail.contains("scripted store failure"))
        await budget.shutdown()
    }

    @Test func unlimitedTeamsHaveNoGateAndGrantsAreSizedToAWindow() {
        let budgets = RateBudgets(ceilings: ["AAAAA11111": 0, "BBBBB22222": 400], store: ScriptedBudgetStore([]),
                                  clock: ManualClock(), logger: Logger(label: "test", sink: MemoryLogSink()))
        #expect(budgets.gate(teamID: "AAAAA11111") == nil)
        #expect(budgets.gate(teamID: "CCCCC33333") == nil)
        #expect(budgets.gate(teamID: "BBBBB22222") != nil)
        #expect(budgets.ceilings == ["BBBBB22222": 400])
        let policy = RateBudgetPolicy()
        #expect(policy.largestGrant(rate: 400) == 80)
        #expect(policy.largestGrant(rate: 0.5) == 1)
        #expect(policy.pause(retryAfter: nil) == .seconds(1))
        #expect(policy.pause(retryAfter: .seconds(86_400)) == .seconds(300))
    }
}
