import Clocks
import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Real worker processes against real PostgreSQL.
@Suite(.serialized, .timeLimit(.minutes(30))) struct WorkerProcessTests {
    @Test func twoWorkerProcessesGiveEveryItemExactlyOneResult() async throws {
        let db = try await TestDatabase.create()
        let job = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 50_000, createdBy: "test")
        let args = ["work", "--drain", "--kinds", "noop", "--concurrency", "512", "--claim-batch", "500"]
        let a = try BinaryProcess(args, environment: db.environment)
        let b = try BinaryProcess(args, environment: db.environment)
        let (statusA, statusB) = (await a.wait(), await b.wait())
        #expect(statusA == 0, "worker A: \(a.stderr.suffix(2000))")
        #expect(statusB == 0, "worker B: \(b.stderr.suffix(2000))")
        let results: Int = try await db.scalar("SELECT count(DISTINCT item_id)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        let rows: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        let succeeded: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'succeeded'")
        let audit: Int = try await db.scalar("SELECT count(*)::int FROM siwa.audit_log WHERE job_id = \(job.jobID) AND action = 'noop.done'")
        let owners: Int = try await db.scalar("SELECT count(DISTINCT actor)::int FROM siwa.audit_log WHERE job_id = \(job.jobID) AND action = 'noop.done'")
        #expect(results == 50_000 && rows == 50_000 && succeeded == 50_000 && audit == 50_000)
        #expect(owners == 2, "both workers should have done part of the work")
        let state: String = try await db.scalar("SELECT state FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(state == "completed")
        await db.drop()
    }

    @Test func databaseDownAtStartIsATemporaryFailure() async throws {
        var env = ProcessInfo.processInfo.environment
        env["PGHOST"] = "127.0.0.1"
        env["PGPORT"] = "1"
        env.removeValue(forKey: "DATABASE_URL")
        let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(run.status == 75)
        #expect(run.stderr.contains("database unreachable"))
        #expect(!run.stderr.contains("Fatal error") && !run.stderr.contains("Stack"))
    }

    @Test(arguments: [["--concurrency", "lots"], ["--concurrency", "0"], ["--concurrency", "99999"], ["--concurency", "8"]])
    func badWorkFlagsAreUsageErrors(_ flags: [String]) async throws {
        let run = try await BinaryProcess.run(["work", "--drain"] + flags, environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 64)
        #expect(run.stderr.contains(flags[0]))
    }

    @Test func unmigratedDatabaseIsAConfigurationError() async throws {
        let db = try await TestDatabase.create(migrated: false)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: db.environment)
        #expect(run.status == 78)
        #expect(run.stderr.contains("siwa-jobs migrate"))
        await db.drop()
    }
}
