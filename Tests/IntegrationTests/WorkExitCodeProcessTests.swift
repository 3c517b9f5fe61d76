import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Exit codes that no longer hide work left undone (issue #8 item 6), through the binary.
@Suite(.serialized) struct WorkExitCodeProcessTests {
    @Test func aDrainWithDueWorkItHasNoCredentialsForExits78NamingTheKindTeamAndClient() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 20, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        for name in ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE"] { env.removeValue(forKey: name) }
        let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(run.status == 78, "\(run.stdout) \(run.stderr.suffix(1500))")
        #expect(run.stdout.contains("job \(job.jobID) (refresh-validation, team \(SIWAWorld.teamID), client \(SIWAWorld.clientID))"),
                "\(run.stdout)")
        #expect(run.stdout.contains("no Apple credentials configured"))
        // Choosing the kinds by hand says the rest is not this worker's business.
        let chosen = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop"], environment: env)
        #expect(chosen.status == 0, "\(chosen.stdout) \(chosen.stderr.suffix(1500))")
        let untouched: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available' AND attempt = 0
            """)
        #expect(untouched == 20)
        await world.tearDown()
    }

    /// A worker with credentials for another team only (one worker per team) never claims this
    /// team's job nor pauses it: its drain names the job (78), and a worker that holds the team
    /// runs it afterwards.
    @Test func aWorkerForAnotherTeamLeavesTheJobRunningForOneThatHoldsIt() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 20, revokedFraction: 0)
        let job = try await world.enqueue()
        let elsewhere = try await world.run(["work", "--drain"], changing: ["SIWA_TEAM_ID": "OTHERTEAM1"])
        #expect(elsewhere.status == 78, "\(elsewhere.stdout) \(elsewhere.stderr.suffix(1500))")
        #expect(elsewhere.stdout.contains("job \(job.jobID) (refresh-validation, team \(SIWAWorld.teamID), client \(SIWAWorld.clientID)) "
            + "has work due that this worker cannot run: no Apple credentials configured on this worker"), "\(elsewhere.stdout)")
        let left: String = try await world.database.scalar("""
            SELECT j.state::text || ' ' || (SELECT count(*) FROM siwa.results r WHERE r.job_id = j.id)
                || ' ' || (SELECT count(*) FROM siwa.item_leases l WHERE l.job_id = j.id)
            FROM siwa.jobs j WHERE j.id = \(job.jobID)
            """)
        #expect(left == "running 0 0", "not paused, nothing claimed: another worker may hold the team")
        let right = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(right.status == 0, "\(right.stdout) \(right.stderr.suffix(1500))")
        #expect(try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)", as: Int.self) == 20)
        await world.tearDown()
    }

    @Test func sigtermMidDrainWithWorkLeftExits75() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(50))
        try await world.seed(accounts: 2000, revokedFraction: 0.03)
        let job = try await world.enqueue()
        let worker = try BinaryProcess(["work", "--drain", "--concurrency", "8"], environment: world.environment)
        let start = ContinuousClock.now
        while try await world.database.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) < 50 {
            if ContinuousClock.now - start > .seconds(60) { Issue.record("no results after 60 s"); break }
            try await Task.sleep(for: .milliseconds(20))
        }
        worker.signal(SIGTERM)
        let status = await worker.wait()
        #expect(status == 75, "\(worker.stdout) \(worker.stderr.suffix(1500))")
        #expect(worker.stdout.contains("stopped before the work was done"), "\(worker.stdout)")
        let left: Int = try await world.database.scalar("""
            SELECT (available + running)::int FROM siwa.job_progress WHERE job_id = \(job.jobID)
            """)
        #expect(left > 0)
        // The counts printed are what the database holds.
        let succeeded: Int = try await world.database.scalar("""
            SELECT succeeded::int FROM siwa.job_progress WHERE job_id = \(job.jobID)
            """)
        #expect(worker.stdout.contains("succeeded=\(succeeded) "), "\(worker.stdout) vs \(succeeded) in the database")
        await world.tearDown()
    }
}
