import Foundation
import Postgres
import Sandbox
import Testing
import TestSupport
@testable import SIWAJobs

/// Issue 8 §10, "one user stalls an export": a per-user `invalid_grant` that other users' calls
/// with the same bearer do not show fails only that user; the job pauses only when every call is
/// refused (see `GrantEvidence`).
@Suite(.serialized, .timeLimit(.minutes(20))) struct TransferGrantTests {
    typealias W = TransferWorld

    static func refuse(_ world: W, _ users: [W.SeededUser]) {
        for user in users {
            world.sandbox.model.setMigrationUserGrantRefused(teamID: W.teamA, clientID: W.clientID, sub: user.sub, refused: true)
        }
    }

    static func outcomes(_ world: W, job: Int64) async throws -> [String: Int] {
        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("SELECT outcome, count(*)::int AS n FROM siwa.results WHERE job_id = \(job) GROUP BY outcome")
        }
        var map: [String: Int] = [:]
        for row in rows { map[try row.decode("outcome")] = try row.decode("n") }
        return map
    }

    @Test func oneUsersInvalidGrantFailsOnlyThatUser() async throws {
        let world = try await W.create()
        let users = try await world.seedSender(count: 60, revokedEvery: 1_000)
        Self.refuse(world, [users[0], users[40]])   // the first canary user, and one after the canary
        let export = try await world.run(TransferSafetyTests.exportArgs(world, canary: 20))
        let job = try #require(W.jobID(export.stdout))
        let work = try await world.run(["work", "--drain", "--concurrency", "4"])
        #expect(work.status == 1, "two users failed, nothing paused: \(work.stdout) \(work.stderr.suffix(1500))")
        #expect(work.stdout.contains("paused_jobs=0"), "\(work.stdout)")
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job)")
        #expect(state == "completed")
        #expect(try await Self.outcomes(world, job: job) == ["exported": 58, "failed": 2])
        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT a.sub, r.apple_error, r.detail->>'reason' AS reason, s.failure
                FROM siwa.results r JOIN siwa.accounts a ON a.id = r.account_id
                JOIN siwa.transfer_subs s ON s.account_id = a.id
                WHERE r.job_id = \(job) AND r.outcome = 'failed' ORDER BY a.id
                """)
        }
        #expect(try rows.map { try $0.decode("sub", as: String.self) } == [users[0].sub, users[40].sub])
        for row in rows {
            #expect(try row.decode("apple_error", as: String?.self) == "invalid_grant")
            #expect(try row.decode("failure", as: String?.self) == "invalid_grant")
            let reason: String = try row.decode("reason")
            #expect(reason.contains("a refusal of this user only"), "\(reason)")
        }
        await world.tearDown()
    }

    /// A job the previous release paused on such a user runs to the end after `job resume`.
    @Test func resumingAPausedExportDoesNotPauseAgainOnTheSameUser() async throws {
        let world = try await W.create()
        let users = try await world.seedSender(count: 30, revokedEvery: 1_000)
        Self.refuse(world, [users[0]])
        let export = try await world.run(TransferSafetyTests.exportArgs(world, canary: 0))
        let job = try #require(W.jobID(export.stdout))
        try await world.database.pool.execute("""
            UPDATE siwa.jobs SET state = 'paused', paused_reason = 'Apple answered invalid_grant (previous release)' WHERE id = \(job)
            """)
        let resume = try await world.run(["job", "resume", "\(job)"])
        #expect(resume.status == 0, "\(resume.stderr)")
        let work = try await world.run(["work", "--drain", "--concurrency", "2"])
        #expect(work.status == 1, "\(work.stdout) \(work.stderr.suffix(1500))")
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job)")
        #expect(state == "completed")
        #expect(try await Self.outcomes(world, job: job) == ["exported": 29, "failed": 1])
        await world.tearDown()
    }

    @Test func evidenceRules() async throws {
        let clock = ManualClock()
        let evidence = GrantEvidence(clock: clock)
        // A recent success: a refusal is this user's alone, until three distinct users in a row.
        evidence.succeeded()
        clock.advance(by: .seconds(2))
        #expect(await evidence.judge(item: 1) == .perUser(secondsSinceSuccess: 2))
        #expect(await evidence.judge(item: 1) == .perUser(secondsSinceSuccess: 2), "the same item twice counts once")
        #expect(await evidence.judge(item: 2) == .perUser(secondsSinceSuccess: 2))
        #expect(await evidence.judge(item: 3) == .everyCall(refused: 3))
        evidence.succeeded()
        #expect(await evidence.judge(item: 4) == .perUser(secondsSinceSuccess: 0), "a success starts the count afresh")

        // No recent success: an undecided refusal waits for another call to settle it.
        let cold = GrantEvidence(clock: clock)
        let waiting = Task { await cold.judge(item: 1) }
        try await Self.untilSleeping(clock, count: 1)
        cold.succeeded()
        #expect(await waiting.value == .perUser(secondsSinceSuccess: 0))
        let alone = Task { await GrantEvidence(clock: clock).judge(item: 9) }
        try await Self.untilSleeping(clock, count: 1)
        clock.advance(by: GrantEvidence.settleWait)
        #expect(await alone.value == .undecided, "nothing settled it within the wait: retried later")

        // Refusals older than the memory are forgotten (a job resumed later counts afresh).
        let old = GrantEvidence(clock: clock)
        old.succeeded()
        #expect(await old.judge(item: 1) == .perUser(secondsSinceSuccess: 0))
        #expect(await old.judge(item: 2) == .perUser(secondsSinceSuccess: 0))
        clock.advance(by: .seconds(301))
        let later = Task { await old.judge(item: 3) }
        try await Self.untilSleeping(clock, count: 1)
        clock.advance(by: GrantEvidence.settleWait)
        #expect(await later.value == .undecided)
    }

    /// Waits (at most about 10 s) until `count` tasks sleep on `clock`.
    static func untilSleeping(_ clock: ManualClock, count: Int) async throws {
        for _ in 0..<1000 where clock.sleeperCount < count {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard clock.sleeperCount >= count else { throw TestFailure("no task started waiting on the manual clock") }
    }
}
