import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// Tester findings on the transfer commands, with the real binary and real PostgreSQL: malformed
/// team IDs, future transfer dates, the same file loaded twice, empty jobs, and `doctor` with only
/// a teams file.
@Suite(.serialized, .timeLimit(.minutes(20))) struct TransferInputChecksTests {
    typealias W = TransferWorld

    static func day(_ offset: Int) -> String { TransferWindow.format(Date().addingTimeInterval(Double(offset) * 86_400)) }

    func importCSV(_ world: W, _ path: String, team: String = W.teamB, source: String? = W.teamA,
                   date: String? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await world.run(["transfer", "import-csv", path, "--team-id", team, "--client-id", W.clientID,
                             "--transfer-date", date ?? world.today] + (source.map { ["--source-team-id", $0] } ?? []))
    }

    @Test func malformedTeamIDsAreRefusedNamingTheFlag() async throws {
        let world = try await W.create()
        _ = try await world.seedSender(count: 5)
        for bad in ["aaaaa11111", "X", "TEAMA1234!"] {
            let export = try await world.run(["transfer", "export", "--team-id", bad, "--client-id", W.clientID,
                                              "--target", W.teamB, "--transfer-date", world.today])
            // A usage error naming the flag (64), from the parser, before the database is opened.
            #expect(export.status == 64 && export.stderr.contains("--team-id: expected a 10-character Apple Team ID")
                    && export.stderr.contains("got '\(bad)'"), "\(export.stderr)")
        }
        // Lower case no longer slips past the own-team check.
        let own = try await world.run(["transfer", "export", "--team-id", W.teamA.lowercased(), "--client-id", W.clientID,
                                       "--target", W.teamA, "--transfer-date", world.today])
        #expect(own.status == 64 && own.stderr.contains("--team-id: expected"), "\(own.stderr)")
        let path = world.directory.appendingPathComponent("f.csv").path
        try Data("external_user_id,transfer_sub\nuser-1,001.a.1\n".utf8).write(to: URL(fileURLWithPath: path))
        for (team, source, field) in [("X", W.teamA, "team-id"), ("teamb67890", W.teamA, "team-id"),
                                      (W.teamB, "teama12345", "source-team-id"), (W.teamB, "X", "source-team-id")] {
            let run = try await importCSV(world, path, team: team, source: source)
            #expect(run.status == 64 && run.stderr.contains("--\(field): expected a 10-character Apple Team ID"),
                    "\(team) \(source): \(run.stderr)")
        }
        // The recipient's own ID as the source is named as such, not with the export's wording.
        let ownSource = try await importCSV(world, path, team: W.teamB, source: W.teamB)
        #expect(ownSource.status == 65 && ownSource.stderr.contains("refused: source-team-id \(W.teamB) is the importing team itself"),
                "\(ownSource.stderr)")
        let jobs: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.jobs")
        let imports: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_imports")
        #expect(jobs == 0 && imports == 0)
        await world.tearDown()
    }

    @Test func futureTransferDatesAreRefusedBeyondTheTolerance() async throws {
        let world = try await W.create()
        _ = try await world.seedSender(count: 5)
        func export(_ date: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await world.run(["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID,
                                 "--target", W.teamB, "--transfer-date", date, "--canary", "0"])
        }
        let far = try await export("2099-01-01")
        #expect(far.status == 65 && far.stderr.contains("refused: transfer_date 2099-01-01 is")
                && far.stderr.contains("an export accepts at most 60 days ahead"), "\(far.stderr)")
        // 62, not 61: a UTC midnight between this line and the binary's check still leaves it 61 ahead.
        #expect(try await export(Self.day(62)).status == 65)
        let early = try await export(Self.day(30))
        #expect(early.status == 0, "exports may run before the recipient accepts: \(early.stderr)")

        let path = world.directory.appendingPathComponent("f.csv").path
        try Data("external_user_id,transfer_sub\nuser-1,001.a.1\n".utf8).write(to: URL(fileURLWithPath: path))
        for date in ["2099-01-01", Self.day(3)] {   // 3: still 2 ahead after a UTC midnight
            let run = try await importCSV(world, path, date: date)
            #expect(run.status == 65 && run.stderr.contains("an import accepts at most 1 day ahead"), "\(run.stderr)")
        }
        let imports: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_imports")
        #expect(imports == 0)
        #expect(try await importCSV(world, path, date: Self.day(1)).status == 0, "one day of time-zone slack")
        // An import loaded before this check with a future date is refused at planning.
        try await world.database.pool.execute("UPDATE siwa.transfer_imports SET transfer_date = current_date + 10")
        let plan = try await world.run(["transfer", "import", "--import", "1"])
        #expect(plan.status == 65 && plan.stderr.contains("in the future"), "\(plan.stderr)")
        await world.tearDown()
    }

    /// The tester's case: the hand-off file loaded twice (the second load before the first import
    /// ran), both imports planned one after the other. The second must not call Apple again.
    @Test func theSameFileLoadedTwiceIsExchangedOnce() async throws {
        let world = try await W.create()
        let users = try await world.seedSender(count: 60)
        let live = users.filter { !$0.revoked }.count
        let export = try await world.run(["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID,
                                          "--target", W.teamB, "--transfer-date", world.today, "--canary", "0"])
        #expect(export.status == 0, "\(export.stderr)")
        _ = try await world.run(["work", "--drain"])
        let csv = world.directory.appendingPathComponent("handoff.csv").path
        #expect(try await world.run(["transfer", "export-csv", "--job", "1", "--out", csv]).status == 0)
        #expect(try await importCSV(world, csv).status == 0)
        let second = try await importCSV(world, csv)
        #expect(second.status == 0 && !second.stdout.contains("already migrated"), "nothing migrated yet: \(second.stdout)")
        world.sandbox.model.resetStats()
        let first = try await world.run(["transfer", "import", "--import", "1", "--canary", "5"])
        #expect(first.stdout.contains("with 5 canary items"), "\(first.stdout)")
        #expect(try await world.run(["work", "--drain", "--concurrency", "8"]).status == 0)
        #expect(world.migrationCalls() == live)
        // Import 2's rows are still pending, but B's accounts hold their transfer_subs: no item, no call.
        let again = try await world.run(["transfer", "import", "--import", "2", "--canary", "0"])
        #expect(again.status == 0 && again.stdout.contains("nothing to do: all rows already have an outcome"), "\(again.stdout)")
        _ = try await world.run(["work", "--drain"])
        #expect(world.migrationCalls() == live, "one exchange per user across both imports")
        let migrated: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE team_id = \(W.teamB)")
        #expect(migrated == live)
        // A third load: every row is already migrated; the note says so and nothing is planned.
        let third = try await importCSV(world, csv)
        #expect(third.stdout.contains("\(live) of \(live) rows are already migrated for team \(W.teamB)"), "\(third.stdout)")
        let rerun = try await world.run(["transfer", "import", "--import", "3"])
        #expect(rerun.stdout.contains("with no items: nothing to do: all rows already have an outcome"), "\(rerun.stdout)")
        _ = try await world.run(["work", "--drain"])
        #expect(world.migrationCalls() == live)
        await world.tearDown()
    }

    @Test func anExportWithNothingToDoSaysSoAndItsStatusIsTruthful() async throws {
        let world = try await W.create()
        // One account whose exchange already has an outcome (a team without accounts is a typo: MessagesTests).
        _ = try await world.seedSender(count: 1)
        try await world.database.pool.execute("""
            INSERT INTO siwa.transfer_subs (account_id, target_team_id, failure, job_id) VALUES (1, \(W.teamB), 'invalid_request', 0)
            """)
        let run = try await world.run(["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID,
                                       "--target", W.teamB, "--transfer-date", world.today])
        #expect(run.status == 0 && run.stdout.contains("nothing to do: all accounts already have an outcome"), "\(run.stdout)")
        _ = try await world.run(["work", "--drain"])
        let status = try await world.run(["transfer", "status", "--job", "1"])
        #expect(status.stdout.contains("[completed]") && status.stdout.contains("nothing to do")
                && !status.stdout.contains("rest not planned yet") && !status.stdout.contains("canary: 20"), "\(status.stdout)")
        await world.tearDown()
    }

    @Test func doctorChecksTheTeamsFileInsteadOfTheSingleTeamVariables() async throws {
        let world = try await W.create()
        var env = world.environment
        for name in ["SIWA_TOKEN_KEY_FILE", "SIWA_TOKEN_KEYS_PREVIOUS", "SIWA_TOKEN_KEY_ID", "SIWA_LOG_LEVEL"] { env.removeValue(forKey: name) }
        env["SIWA_TOKEN_KEY"] = String(repeating: "ab", count: 32)
        let ok = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(ok.status == 0, "\(ok.stdout)")
        #expect(ok.stdout.contains("ok    teams file (SIWA_TEAMS_FILE): 2 teams") && ok.stdout.contains(W.teamB), "\(ok.stdout)")
        #expect(!ok.stdout.contains("FAIL"), "\(ok.stdout)")
        // A key file that went missing is named.
        try FileManager.default.removeItem(at: world.directory.appendingPathComponent("AuthKey_\(W.keyB).p8"))
        let broken = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(broken.status == 78 && broken.stdout.contains("FAIL  teams file (SIWA_TEAMS_FILE): SIWA_TEAMS_FILE teams[1].key_file"),
                "\(broken.stdout)")
        await world.tearDown()
    }
}
