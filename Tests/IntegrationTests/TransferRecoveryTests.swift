import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// The 60-day window, bearer expiry mid-run, and kill -9 during an import, with the real binary.
@Suite(.serialized, .timeLimit(.minutes(20))) struct TransferRecoveryTests {
    typealias W = TransferWorld

    static func day(_ daysAgo: Double) -> String {
        TransferWindow.format(Date().addingTimeInterval(-daysAgo * 86_400))
    }

    @Test func afterDaySixtyJobsRefuseToStartAndNameTheRecovery() async throws {
        let world = try await W.create()
        _ = try await world.seedSender(count: 200, daysAgo: 61)
        let late = try await world.run(TransferSafetyTests.exportArgs(world, date: Self.day(61)))
        #expect(late.status == 65, "\(late.stderr)")
        #expect(late.stderr.contains("60-day migration window") && late.stderr.contains("transfer the app back"))
        let csv = world.directory.appendingPathComponent("h.csv").path
        try Data("external_user_id,transfer_sub\nu1,123.abc.1\n".utf8).write(to: URL(fileURLWithPath: csv))
        let load = try await world.run(["transfer", "import-csv", csv, "--team-id", W.teamB, "--client-id", W.clientID,
                                        "--transfer-date", Self.day(61)])
        #expect(load.status == 65 && load.stderr.contains("transfer the app back"))

        // Day 10: status shows 50 days left.
        let dayTen = Self.day(10)
        let ok = try await world.run(TransferSafetyTests.exportArgs(world, date: dayTen, canary: 0))
        let job = try #require(W.jobID(ok.stdout))
        let (status, daysLeft) = try await world.statusAndDaysLeft(job: job, transferDate: dayTen)
        #expect(daysLeft[0] == 50 || daysLeft[0] == 49)   // 49 once a UTC midnight has passed
        #expect(daysLeft.contains { status.contains("\($0) days left") }, "\(status)")

        // The job's date says the window is open, but Apple's (the sandbox's) transfer is 61 days old:
        // invalid_grant even with a fresh token pauses the job with the recovery, after few calls.
        let work = try await world.run(["work", "--drain", "--concurrency", "8"])
        #expect(work.status == 78 && work.stdout.contains("migration window is likely closed"), "\(work.stdout)")
        #expect(work.stdout.contains("transfer the app back"))
        #expect(world.migrationCalls() <= 16, "\(world.migrationCalls())")

        // A job whose own transfer date has aged past day 60 refuses before any call.
        world.sandbox.model.resetStats()
        try await world.database.pool.execute("""
            UPDATE siwa.jobs SET state = 'running', paused_reason = NULL,
                   spec = jsonb_set(spec, '{transfer_date}', to_jsonb(\(Self.day(70))::text)) WHERE id = \(job)
            """)
        let refused = try await world.run(["work", "--drain", "--concurrency", "8"])
        #expect(refused.status == 78 && refused.stdout.contains("closed on"), "\(refused.stdout)")
        #expect(world.sandbox.model.stats().requests.isEmpty)
        await world.tearDown()
    }

    @Test func anExpiredBearerIsReMintedOnceForEveryone() async throws {
        // 20 ms a call: after the first 500 results the other 2,500 take at least 1.5 s at C = 32,
        // time enough for the test to move the sandbox's clock while calls are still being made.
        let world = try await W.create(latency: .fixed(20))
        _ = try await world.seedSender(count: 3_000)
        let run = try await world.run(TransferSafetyTests.exportArgs(world, canary: 0))
        let job = try #require(W.jobID(run.stdout))
        let started = Date()
        let worker = try BinaryProcess(["work", "--drain", "--concurrency", "32"], environment: world.environment)
        try await Eventually.wait("500 results written", while: worker) {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job)", as: Int.self) >= 500
        }
        world.sandbox.model.clockOffset = 3_700   // every bearer minted so far is now past its hour
        let status = await worker.wait()
        let seconds = Date().timeIntervalSince(started)
        #expect(status == 1, "\(worker.stderr.suffix(800))")
        let stats = world.sandbox.model.stats()
        #expect(stats.bearerTokensMinted == 2, "one mint, one single-flight re-mint: \(stats.bearerTokensMinted)")
        #expect(Double(stats.bearerTokensMinted) <= seconds / 3600 + 2)
        #expect((stats.errors["invalid_grant"] ?? 0) >= 1)
        let exported: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_subs WHERE transfer_sub IS NOT NULL")
        #expect(exported == 3_000 - 90)
        await world.tearDown()
    }

    @Test func killMinusNineMidImportThenRestartLosesAndDuplicatesNothing() async throws {
        // 50 ms per call keeps the import running for seconds, so the kill at 400 results finds
        // items in flight even on a loaded machine.
        let world = try await W.create(latency: .fixed(50))
        let users = try await world.seedSender(count: 3_000)
        let live = users.filter { !$0.revoked }.count
        let export = try await world.run(TransferSafetyTests.exportArgs(world, canary: 0))
        let exportJob = try #require(W.jobID(export.stdout))
        _ = try await world.run(["work", "--drain", "--concurrency", "128"])
        let csv = world.directory.appendingPathComponent("handoff.csv").path
        #expect(try await world.run(["transfer", "export-csv", "--job", "\(exportJob)", "--out", csv]).status == 0)
        #expect(try await world.run(["transfer", "import-csv", csv, "--team-id", W.teamB, "--client-id", W.clientID,
                                     "--transfer-date", world.today, "--source-team-id", W.teamA]).status == 0)
        let importRun = try await world.run(["transfer", "import", "--import", "1", "--canary", "10"])
        let job = try #require(W.jobID(importRun.stdout))

        let first = try BinaryProcess(["work", "--drain", "--concurrency", "32", "--lease-seconds", "3"], environment: world.environment)
        try await Eventually.wait("400 results written", while: first) {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job)", as: Int.self) >= 400
        }
        first.signal(SIGKILL)
        _ = await first.wait()
        let running: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job) AND state = 'running'")
        #expect(running > 0, "the kill should leave leased items behind")
        let rerun = try await world.run(["work", "--drain", "--concurrency", "64"])
        #expect(rerun.status == 0, "\(rerun.stderr.suffix(1500))")

        let accounts: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE team_id = \(W.teamB)")
        let distinct: Int = try await world.database.scalar("""
            SELECT count(DISTINCT external_user_id)::int FROM siwa.accounts WHERE team_id = \(W.teamB)
            """)
        let migrated: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_import_rows WHERE state = 'migrated'")
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job)")
        let items: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job)")
        #expect(accounts == live && distinct == live, "0 lost, 0 duplicate rows")
        #expect(migrated == live && results == live && items == live)
        await world.tearDown()
    }
}
