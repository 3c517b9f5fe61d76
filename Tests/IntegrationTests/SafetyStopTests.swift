import Clocks
import Foundation
import Postgres
import Queue
import Sandbox
import Testing
@testable import SIWAJobs

/// Safety stops (README "Safety stops and cron"): a validation or sweep whose first results are
/// mostly invalid_grant pauses, holds back its invalid verdicts, and `job resume` overrides it.
@Suite(.serialized) struct SafetyStopTests {
    /// Seeds accounts whose tokens the sandbox never issued: every validation is invalid_grant.
    func seedUnknownTokens(_ world: SIWAWorld, accounts: Int) async throws {
        _ = try await Seeder(pool: world.database.pool, keyring: try world.keyring).seed(
            accounts: accounts, revokedFraction: 0, teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
    }

    func int(_ world: SIWAWorld, _ sql: SQL) async throws -> Int { try await world.database.scalar(sql) }

    @Test func aValidationAgainstASandboxThatKnowsNoTokenPausesAndResumeLetsItFinish() async throws {
        let world = try await SIWAWorld.create()
        try await seedUnknownTokens(world, accounts: 600)
        let enqueue = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: world.environment)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        #expect(enqueue.stdout.contains("enqueued job 1 (refresh-validation) with 600 items"), "\(enqueue.stdout)")
        #expect(enqueue.stdout.contains("safety stop: more than 50% invalid_grant in the first 200 results pauses the job"))

        // At most 24 completions unwritten or running: each statement carries at most 24 results,
        // so the stop trips by 100 + 24 whatever the timing (the default bound, C + 1,024, lets a
        // slow database see one statement of hundreds).
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8", "--max-unflushed", "24"],
                                              environment: world.environment)
        #expect(run.status == 78, "a paused job needs ops: \(run.stdout) \(run.stderr.suffix(800))")
        #expect(run.stdout.contains("job 1 paused: safety stop: "), "\(run.stdout)")
        #expect(run.stdout.contains("siwa-jobs job resume 1") && run.stdout.contains("SIWA_APPLE_BASE_URL"))
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = 1")
        #expect(state == "paused")
        let decidedAt = try await int(world, "SELECT decided_seen FROM siwa.safety_stops WHERE job_id = 1")
        let results = try await int(world, "SELECT count(*)::int FROM siwa.results WHERE job_id = 1")
        #expect(decidedAt <= 200, "the stop tripped within the first 200 results (at \(decidedAt))")
        #expect(results < 600 && results >= decidedAt, "in-flight items finish, the rest waits: \(results)")
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'") == 0,
                "no real token is marked invalid while the job is stopped")
        #expect(try await int(world, "SELECT cardinality(deferred_accounts) FROM siwa.safety_stops WHERE job_id = 1") == results)
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.audit_log WHERE job_id = 1 AND action = 'job.safety_stop'") == 1)

        let resume = try await BinaryProcess.run(["job", "resume", "1"], environment: world.environment)
        #expect(resume.status == 0 && resume.stdout.contains("resumed past its safety stop"), "\(resume.stdout) \(resume.stderr)")
        #expect(resume.stdout.contains("\(results) held-back invalid verdicts applied"), "\(resume.stdout)")
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'") == results)
        let finish = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8"], environment: world.environment)
        #expect(finish.status == 0, "resumed past the stop, the job is not paused again: \(finish.stdout) \(finish.stderr.suffix(800))")
        let final: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = 1")
        #expect(final == "completed")
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'") == 600)
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.audit_log WHERE action = 'job.safety_stop_overridden'") == 1)
        let stop: String = try await world.database.scalar("SELECT state FROM siwa.safety_stops WHERE job_id = 1")
        #expect(stop == "overridden")
        await world.tearDown()
    }

    @Test func aHealthyValidationPassesAndItsHeldBackVerdictsAreApplied() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 500, revokedFraction: 0.1)
        let job = try await world.enqueue()
        #expect(job.safetyStop?.state == .armed && job.safetyStop?.window == 200)
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "16"], environment: world.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(800))")
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'") == truth.revoked)
        #expect(truth.revoked == 50)
        let stop: String = try await world.database.scalar("SELECT state FROM siwa.safety_stops WHERE job_id = \(job.jobID)")
        #expect(stop == "passed")
        #expect(try await int(world, """
            SELECT count(*)::int FROM siwa.audit_log WHERE job_id = \(job.jobID) AND action = 'job.safety_passed'
            """) == 1)
        await world.tearDown()
    }

    @Test func aClientWhoseLastFinishedJobWasAboveTheThresholdIsExempt() async throws {
        let world = try await SIWAWorld.create()
        try await seedUnknownTokens(world, accounts: 60)
        let first = try await world.enqueue(safetyStop: .off)
        #expect(first.safetyStop == nil)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(run.status == 0, "rule off: \(run.stdout)")
        // The same client, checked again (as if a day later): its last finished job was 100% invalid_grant.
        try await world.database.pool.execute("UPDATE siwa.accounts SET token_status = 'unknown', token_checked_at = NULL")
        let again = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: world.environment)
        #expect(again.stdout.contains("safety stop: exempt; the client's last finished job \(first.jobID) had 100.0% invalid_grant"),
                "\(again.stdout)")
        let second = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(second.status == 0, "exempt: not paused: \(second.stdout)")
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'") == 60)
        await world.tearDown()
    }

    @Test func theThresholdComesFromTheFlagOrTheEnvironment() async throws {
        let world = try await SIWAWorld.create()
        try await seedUnknownTokens(world, accounts: 40)
        var env = world.environment
        let bad = try await BinaryProcess.run(["enqueue", "refresh-validation", "--safety-stop", "100"], environment: env)
        #expect(bad.status == 64 && bad.stderr.contains("--safety-stop"), "\(bad.stderr)")
        env["SIWA_SAFETY_STOP_PERCENT"] = "lots"
        let badEnv = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: env)
        #expect(badEnv.status == 78 && badEnv.stderr.contains("SIWA_SAFETY_STOP_PERCENT"), "\(badEnv.stderr)")
        env["SIWA_SAFETY_STOP_PERCENT"] = "off"
        let off = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: env)
        #expect(off.status == 0 && !off.stdout.contains("safety stop"), "\(off.stdout)")
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.safety_stops") == 0)
        try await world.database.pool.execute("UPDATE siwa.jobs SET state = 'cancelled'")
        let flag = try await BinaryProcess.run(["enqueue", "refresh-validation", "--safety-stop", "80%"], environment: env)
        #expect(flag.stdout.contains("more than 80% invalid_grant in the first 40 results"), "the flag beats the variable: \(flag.stdout)")
        await world.tearDown()
    }

    /// The sweep's stop, driven through the queue's completion statement: 30 refused revocations
    /// of 40 trip it (nothing is held back: a refusal changes no account).
    @Test func aSweepWhoseRevocationsAreRefusedPauses() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 40, revokedFraction: 0)
        try await world.database.pool.execute("UPDATE siwa.accounts SET deleted_at = now()")
        let job = try #require(try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRevocationSweep(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test"))
        #expect(job.safetyStop?.window == 40)
        let store = PostgresJobStore(pool: world.database.pool)
        let claimed = try await store.claim(owner: "w", kinds: [RevocationSweepHandler.kind], limit: 40, lease: .seconds(30))
        let refused = claimed.prefix(30).map { item in
            Completion(item: item, kind: RevocationSweepHandler.kind, state: .failed, lastError: "invalid_grant",
                       result: ResultRecord(RevocationSweepHandler.Outcome.failed, httpStatus: 400, appleError: "invalid_grant"),
                       effect: EffectPayload(RevocationSweepHandler.Refusal(appleError: "invalid_grant")))
        }
        let writes = KindWrites.appleCalls(effect: RevocationSweepHandler.effect)
        #expect(try await store.complete(Array(refused.prefix(15)), owner: "w", writes: writes).count == 15)
        let open: String = try await world.database.scalar("SELECT state FROM siwa.safety_stops WHERE job_id = \(job.jobID)")
        #expect(open == "open", "15 of 40 cannot decide yet")
        #expect(try await store.complete(Array(refused.suffix(15)), owner: "w", writes: writes).count == 15)
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job.jobID)")
        let reason: String = try await world.database.scalar("SELECT paused_reason FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(state == "paused" && reason.hasPrefix("safety stop: 30 of the first 30 results were invalid_grant"), "\(reason)")
        #expect(!reason.contains("held back"))
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_ciphertext IS NULL") == 0)
        await world.tearDown()
    }

    /// Items discarded by lease rescue bypass the completion statement: a window that never
    /// filled is judged when the job completes.
    @Test func aWindowThatNeverFilledIsJudgedWhenTheJobCompletes() async throws {
        let world = try await SIWAWorld.create()
        try await seedUnknownTokens(world, accounts: 30)
        let job = try await world.enqueue()
        let store = PostgresJobStore(pool: world.database.pool)
        let claimed = try await store.claim(owner: "w", kinds: [RefreshValidationHandler.kind], limit: 30, lease: .seconds(30))
        let invalid = claimed.prefix(10).map { item in
            Completion(item: item, kind: RefreshValidationHandler.kind, state: .succeeded,
                       result: ResultRecord(RefreshValidationHandler.Outcome.invalid, httpStatus: 400, appleError: "invalid_grant"))
        }
        #expect(try await store.complete(invalid, owner: "w", writes: RefreshValidationHandler.effectWrites).count == 10)
        try await world.database.pool.execute("""
            UPDATE siwa.job_items SET state = 'discarded', lease_owner = NULL, finished_at = now()
            WHERE job_id = \(job.jobID) AND state IN ('running', 'available')
            """)
        #expect(try await store.completeFinishedJobs().isEmpty, "held: 10 of 10 judged results were invalid_grant")
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(state == "paused")
        #expect(try await int(world, "SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'") == 0)
        await world.tearDown()
    }
}

extension RefreshValidationHandler {
    static var effectWrites: KindWrites { .appleCalls(effect: effect) }
}
