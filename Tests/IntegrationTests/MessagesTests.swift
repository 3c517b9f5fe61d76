import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Issue 8 item 11 through the binary: messages that say what is wrong, typos named, and a file
/// loaded twice at once exchanged once per user.
@Suite(.serialized) struct MessagesTests {
    typealias W = TransferWorld

    func importCSV(_ world: W, _ path: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await world.run(["transfer", "import-csv", path, "--team-id", W.teamB, "--client-id", W.clientID,
                             "--transfer-date", world.today, "--source-team-id", W.teamA])
    }

    /// Runs `siwa-jobs ARGS < file` through /bin/sh (BinaryProcess reads stdin from /dev/null).
    func withStdin(_ world: W, _ file: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let words = ([BinaryProcess.binaryPath] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try await ShellScript.run("exec \(words) < '\(file)'", environment: world.environment)
    }

    @Test func aCSVThatIsADirectoryOrMissingSaysWhyAndDashIsStandardInput() async throws {
        let world = try await W.create()
        let directory = try await importCSV(world, world.directory.path)
        #expect(directory.status == 66, "\(directory.stderr)")
        #expect(directory.stderr.contains("'\(world.directory.path)' cannot be read: is a directory"), "\(directory.stderr)")
        #expect(!directory.stderr.contains("NSCocoaErrorDomain") && !directory.stderr.contains("Code="))
        let csv = world.directory.appendingPathComponent("in.csv").path
        try Data("external_user_id,transfer_sub\nuser-1,001.a.1\nuser-2,001.b.2\n".utf8).write(to: URL(fileURLWithPath: csv))
        let piped = try await withStdin(world, csv, ["transfer", "import-csv", "-", "--team-id", W.teamB, "--client-id", W.clientID,
                                                     "--transfer-date", world.today])
        #expect(piped.status == 0 && piped.stdout.contains("loaded import 1: 2 rows from -"), "\(piped.stdout) \(piped.stderr)")
        let name: String = try await world.database.scalar("SELECT file_name FROM siwa.transfer_imports WHERE id = 1")
        #expect(name == "(standard input)")
        await world.tearDown()
    }

    @Test func aKeyFileReadsFromStandardInputAndADirectorySaysSo() async throws {
        let world = try await W.create()
        let key = world.directory.appendingPathComponent("AuthKey_\(W.keyA).p8").path
        let flags = ["client-secret", "--team-id", W.teamA, "--key-id", W.keyA, "--client-id", W.clientID, "--key-file"]
        let piped = try await withStdin(world, key, flags + ["-"])
        #expect(piped.status == 0 && piped.stdout.split(separator: ".").count == 3, "a JWT: \(piped.stdout) \(piped.stderr)")
        let directory = try await world.run(flags + [world.directory.path])
        #expect(directory.status == 78 && directory.stderr.contains("cannot be read: is a directory (SIWA_KEY_FILE / --key-file)"),
                "\(directory.stderr)")
        await world.tearDown()
    }

    @Test func duplicateLineErrorsAreCapped() async throws {
        let world = try await W.create()
        var text = "external_user_id,transfer_sub\n"
        for i in 1...5_000 { text += "user-\(i),001.same.1\n" }   // one transfer_sub on 5,000 lines
        let path = world.directory.appendingPathComponent("dup.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let run = try await importCSV(world, path)
        #expect(run.status == 65)
        let lines = (2...21).map(String.init).joined(separator: ", ")
        #expect(run.stderr.contains("line 2: duplicate transfer_sub (appears 5000 times, on lines \(lines) and 4980 more)"),
                "\(run.stderr.prefix(600))")
        #expect(run.stderr.utf8.count < 2_000, "stderr stays short: \(run.stderr.utf8.count) bytes")
        await world.tearDown()
    }

    @Test func aTypoInTheTeamOrClientIsNamedAndCreatesNoJob() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 5, revokedFraction: 0)
        var env = world.environment
        env["SIWA_CLIENT_ID"] = "com.example.sima"
        let client = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: env)
        #expect(client.status == 65, "\(client.stdout) \(client.stderr)")
        #expect(client.stderr.contains("team \(SIWAWorld.teamID) has no account for client 'com.example.sima' at all: likely a typo "
            + "in --client-id or SIWA_CLIENT_ID (this team's clients: \(SIWAWorld.clientID)); no job was created"), "\(client.stderr)")
        let team = try await BinaryProcess.run(["enqueue", "revocation-sweep", "--team-id", "TEAMA12346"], environment: world.environment)
        #expect(team.status == 65 && team.stderr.contains("team 'TEAMA12346' has no account at all: likely a typo in --team-id "
            + "or SIWA_TEAM_ID (teams with accounts: \(SIWAWorld.teamID))"), "\(team.stderr)")
        let export = try await BinaryProcess.run(["transfer", "export", "--client-id", "com.example.sima", "--target", "BBBBB22222",
                                                  "--transfer-date", TransferWindow.format(Date())], environment: world.environment)
        #expect(export.status == 65 && export.stderr.contains("likely a typo in --client-id"), "\(export.stderr)")
        // Nothing due is not a typo: exit 0, no job.
        let sweep = try await BinaryProcess.run(["enqueue", "revocation-sweep"], environment: world.environment)
        #expect(sweep.status == 0 && sweep.stdout.contains("nothing to enqueue: no deleted or consent-revoked account"), "\(sweep.stdout)")
        let jobs: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.jobs")
        #expect(jobs == 0)
        // An active job is reported, not an error.
        let first = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: world.environment)
        let again = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: world.environment)
        let id = try #require(W.jobID(first.stdout), "\(first.stdout)")   // ids of rolled-back plans are skipped
        #expect(first.stdout.contains("enqueued job \(id) (refresh-validation) with 5 items"), "\(first.stdout)")
        #expect(again.status == 0 && again.stdout.contains("already active: job \(id) (refresh-validation, 5 items)"), "\(again.stdout)")
        await world.tearDown()
    }

    /// Two `transfer import-csv` runs of one file at once, then both imports planned at once:
    /// the loads serialise on the team's lock, and Apple is asked once per user.
    @Test func oneFileLoadedAndPlannedTwiceAtOnceIsExchangedOnce() async throws {
        let world = try await W.create()
        let users = try await world.seedSender(count: 80)
        let live = users.filter { !$0.revoked }.count
        #expect(try await world.run(["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID, "--target", W.teamB,
                                     "--transfer-date", world.today, "--canary", "0"]).status == 0)
        _ = try await world.run(["work", "--drain"])
        let csv = world.directory.appendingPathComponent("handoff.csv").path
        #expect(try await world.run(["transfer", "export-csv", "--job", "1", "--out", csv]).status == 0)
        async let a = importCSV(world, csv)
        async let b = importCSV(world, csv)
        let (loadA, loadB) = try await (a, b)
        #expect(loadA.status == 0 && loadB.status == 0, "\(loadA.stderr) \(loadB.stderr)")
        let notes = loadA.stdout + loadB.stdout
        #expect(notes.contains("\(live) rows are also pending in import 1 (the same users)")
                || notes.contains("\(live) rows are also pending in import 2 (the same users)"), "the later load says so: \(notes)")
        world.sandbox.model.resetStats()
        async let planA = world.run(["transfer", "import", "--import", "1", "--canary", "5"])
        async let planB = world.run(["transfer", "import", "--import", "2", "--canary", "5"])
        let (p1, p2) = try await (planA, planB)
        #expect(p1.status == 0 && p2.status == 0, "\(p1.stderr) \(p2.stderr)")
        let plans = p1.stdout + p2.stdout
        #expect(plans.contains("with 5 canary items") && plans.contains("with no items: its rows are another active import's"),
                "one plan takes the rows, the other none: \(plans)")
        #expect(plans.contains("note: \(live) rows are also in import "), "\(plans)")
        let run = try await world.run(["work", "--drain", "--concurrency", "8"])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr.suffix(800))")
        #expect(world.migrationCalls() == live, "one exchange per user across both imports")
        let migrated: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE team_id = \(W.teamB)")
        #expect(migrated == live)
        await world.tearDown()
    }
}
