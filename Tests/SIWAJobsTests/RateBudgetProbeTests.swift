import AppleID
import Foundation
import Queue
import Testing
import TestSupport
@testable import SIWAJobs

/// The probe (`RateBudgetPolicy.probes`): at start and after a pause one call goes alone, and the
/// rest wait for its answer, its failure, or `probeTimeout`. Manual clock, scripted store; each
/// wait has a deadline and no timing is asserted.
@Suite struct RateBudgetProbeTests {
    @Test func theFirstCallGoesAloneAndItsAnswerReleasesTheRest() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.permits(1, rate: 20)), .success(.permits(4, rate: 20))])
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        let tasks = (0..<3).map { _ in admissions.admit(budget) }
        try await until("the probe admitted, two waiting on its answer") {
            admissions.admitted == 1 && budget.waiting(.token) == 2 && clock.sleeperCount >= 1
        }
        #expect(store.wants == [1], "the probe's grant is for one permit, whoever waits")
        clock.advance(by: .seconds(1))                          // a grant's spacing and lifetime pass: still nothing
        try await until("the dispatcher still waiting on the probe") { clock.sleeperCount >= 1 }
        #expect(admissions.admitted == 1 && store.wants == [1])
        await budget.observe(.token, status: 200, retryAfter: nil)
        try await until("the next permit, from a grant for the two waiting") { admissions.admitted == 2 && clock.sleeperCount >= 1 }
        #expect(store.wants == [1, 2])
        clock.advance(by: .milliseconds(50))                    // 200 ms / 4 permits
        for task in tasks { await task.value }
        #expect(admissions.admitted == 3)
        await budget.shutdown()
    }

    @Test func afterA429sPauseTheFirstCallIsAProbeAgain() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.permits(1, rate: 20)), .success(.permits(1, rate: 14)),
                                         .success(.permits(3, rate: 14))])
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        await admissions.admit(budget).value
        await budget.observe(.token, status: 429, retryAfter: .seconds(2))
        let tasks = (0..<3).map { _ in admissions.admit(budget) }
        try await until("three waiting out the pause") { budget.waiting(.token) == 3 && clock.sleeperCount >= 1 }
        clock.advance(by: .seconds(2))
        try await until("one probe after the pause") { admissions.admitted == 2 && clock.sleeperCount >= 1 }
        #expect(store.wants == [1, 1], "the grant after the pause is the probe's, for one")
        #expect(budget.waiting(.token) == 2)
        await budget.unanswered(.token)                         // a transport failure ends the probe too
        try await until("the rest released") { admissions.admitted == 3 && clock.sleeperCount >= 1 }
        #expect(store.wants == [1, 1, 2])
        clock.advance(by: .milliseconds(67))
        for task in tasks { await task.value }
        #expect(admissions.admitted == 4)
        await budget.shutdown()
    }

    @Test func aProbeWhoseAnswerNeverComesIsDroppedAfterItsTimeout() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.permits(1, rate: 20)), .success(.permits(2, rate: 20))])
        let budget = RateBudget.testing(store, clock: clock, policy: RateBudgetPolicy(probeTimeout: .seconds(5)))
        let admissions = Admissions()
        let tasks = (0..<2).map { _ in admissions.admit(budget) }
        try await until("the probe admitted") { admissions.admitted == 1 && clock.sleeperCount >= 1 }
        clock.advance(by: .milliseconds(4900))
        try await until("still waiting on the probe") { clock.sleeperCount >= 1 }
        #expect(admissions.admitted == 1 && store.wants == [1])
        clock.advance(by: .milliseconds(100))
        for task in tasks { await task.value }
        #expect(admissions.admitted == 2 && store.wants == [1, 1])
        await budget.shutdown()
    }

    @Test func aPauseOfTheTeamReadAtAGrantIsFollowedByAProbe() async throws {
        let clock = ManualClock()
        let store = ScriptedBudgetStore([.success(.permits(1, rate: 20)), .success(.paused(.seconds(3))),
                                         .success(.permits(1, rate: 20)), .success(.permits(4, rate: 20))])
        let budget = RateBudget.testing(store, clock: clock)
        let admissions = Admissions()
        await admissions.admit(budget).value
        await budget.observe(.token, status: 200, retryAfter: nil)
        let tasks = (0..<2).map { _ in admissions.admit(budget) }
        try await until("the team's pause read") { store.wants.count == 2 && clock.sleeperCount >= 1 }
        // No probe is pending before the pause, so that grant asks for every item then waiting:
        // both, or one when the dispatcher asked before the second task was queued.
        let before = store.wants[1]
        #expect(store.wants[0] == 1 && (before == 1 || before == 2))
        clock.advance(by: .seconds(3))
        try await until("the probe after the pause") { admissions.admitted == 2 && clock.sleeperCount >= 1 }
        #expect(store.wants == [1, before, 1], "the grant after the pause is the probe's, for one")
        await budget.observe(.token, status: 400, retryAfter: nil)   // any answer but a 429 ends it
        for task in tasks { await task.value }
        #expect(admissions.admitted == 3 && store.wants == [1, before, 1, 1])
        await budget.shutdown()
    }
}
