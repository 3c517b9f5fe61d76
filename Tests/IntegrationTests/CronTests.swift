import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// The shipped cron line and systemd unit (jobs/), run as written with the binary's path put in:
/// the drain runs every time, and the status says what cron and systemd should do.
@Suite(.serialized) struct CronTests {
    /// The repository's `jobs/` directory, found from this file.
    static let jobs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("jobs")

    /// The command of the crontab line that runs `enqueue KIND` (after the five time fields and the user).
    static func cronCommand(enqueueing kind: String) throws -> String {
        let text = try String(contentsOf: jobs.appendingPathComponent("crontab.example"), encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { !$0.hasPrefix("#") && $0.contains("enqueue \(kind)") })
        var rest = Substring(line)
        for _ in 0..<6 {   // minute hour day month weekday user
            rest = rest.drop { $0 != " " }.drop { $0 == " " }
        }
        return String(rest)
    }

    /// The `/bin/sh -c '...'` script of a unit's ExecStart, with systemd's `$$` as `$`.
    static func unitScript(_ unit: String) throws -> String {
        let text = try String(contentsOf: jobs.appendingPathComponent(unit), encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("ExecStart=/bin/sh -c '") })
        return String(line.dropFirst("ExecStart=/bin/sh -c '".count).dropLast()).replacingOccurrences(of: "$$", with: "$")
    }

    struct Shell {
        let directory: URL
        /// The world's PG* and SIWA_* variables (with overrides): the environment file's lines.
        let variables: [String: String]

        /// Writes the environment file cron sources.
        init(_ world: SIWAWorld, overrides: [String: String] = [:]) throws {
            directory = world.directory
            variables = world.environment.merging(overrides) { $1 }.filter { $0.key.hasPrefix("PG") || $0.key.hasPrefix("SIWA_") }
            let file = variables.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(separator: "\n") + "\n"
            try Data(file.utf8).write(to: directory.appendingPathComponent("env"))
        }

        /// Runs `command` with the binary, the environment file and the log directory put in, in
        /// cron's bare environment; `exported` adds the variables, as systemd's EnvironmentFile does.
        func run(_ command: String, exported: Bool = false) async throws -> (status: Int32, stdout: String, stderr: String) {
            var env = ["PATH": "/usr/bin:/bin", "HOME": directory.path]
            if exported { env.merge(variables) { $1 } }
            let bin = BinaryProcess.binaryPath
            let script = command
                .replacingOccurrences(of: "/usr/local/bin/siwa-jobs ", with: "siwa-jobs ")
                .replacingOccurrences(of: "siwa-jobs enqueue", with: "'\(bin)' enqueue")
                .replacingOccurrences(of: "siwa-jobs work", with: "'\(bin)' work")
                .replacingOccurrences(of: "/etc/siwa-jobs/env", with: directory.appendingPathComponent("env").path)
                .replacingOccurrences(of: "/var/log/siwa-jobs/", with: directory.path + "/")
            return try await ShellScript.run(script, environment: env)
        }

        func log(_ name: String) -> String {
            (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
        }
    }

    /// Items of job 1 due later (as retries beyond the drain horizon are, which are claimed singly
    /// once due): the job stays active.
    func deferItems(_ world: SIWAWorld, count: Int) async throws {
        try await world.database.pool.execute("""
            UPDATE siwa.job_items SET run_at = now() + interval '1 hour', claim_singly = true
            WHERE id IN (SELECT id FROM siwa.job_items WHERE job_id = 1 ORDER BY id DESC LIMIT \(count))
            """)
    }

    func results(_ world: SIWAWorld) async throws -> Int {
        try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = 1")
    }

    @Test func theNightlyLineDrainsTwiceInARowWhileTheJobIsStillActive() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 300, revokedFraction: 0.02)
        let job = try await world.enqueue()
        #expect(job.jobID == 1)
        try await deferItems(world, count: 100)
        let shell = try Shell(world)
        let command = try Self.cronCommand(enqueueing: "refresh-validation")
        #expect(command.hasPrefix("set -a; . /etc/siwa-jobs/env; set +a; { siwa-jobs enqueue refresh-validation; e=$?;"))

        let first = try await shell.run(command)
        #expect(first.status == 75, "work left for the next run: \(first.stderr) \(shell.log("nightly.log").suffix(1500))")
        #expect(first.stderr.isEmpty, "75 is no alert: \(first.stderr)")
        #expect(try await results(world) == 200)
        try await world.database.pool.execute("""
            UPDATE siwa.job_items SET run_at = now() WHERE id IN (SELECT id FROM siwa.job_items WHERE job_id = 1
                                                                  AND state = 'available' AND claim_singly ORDER BY id LIMIT 50)
            """)
        let second = try await shell.run(command)
        #expect(second.status == 75 && second.stderr.isEmpty, "\(second.stderr)")
        #expect(try await results(world) == 250, "the second run drained too")
        let log = shell.log("nightly.log")
        #expect(log.components(separatedBy: "already active: job 1 (refresh-validation, 300 items)").count == 3, "\(log.prefix(2000))")
        #expect(log.components(separatedBy: "worker: succeeded=").count == 3, "two drains: \(log.prefix(2000))")
        let jobs: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.jobs")
        #expect(jobs == 1)

        // The rest due: the drain finishes the job, and the line exits 0. Run again: nothing is due, 0 again.
        try await world.database.pool.execute("UPDATE siwa.job_items SET run_at = now() WHERE state = 'available'")
        let third = try await shell.run(command)
        #expect(third.status == 0 && third.stderr.isEmpty, "\(third.stderr) \(shell.log("nightly.log").suffix(800))")
        let fourth = try await shell.run(command)
        let finalLog = shell.log("nightly.log")
        #expect(fourth.status == 0 && finalLog.contains("nothing to enqueue: no account of team"), "\(finalLog.suffix(800))")
        await world.tearDown()
    }

    @Test func aFailingEnqueueStillDrainsAndAlerts() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 50, revokedFraction: 0)
        _ = try await world.enqueue()
        // Only the enqueue reads this setting: it fails (78), the worker does not.
        let shell = try Shell(world, overrides: ["SIWA_SAFETY_STOP_PERCENT": "lots"])
        let run = try await shell.run(try Self.cronCommand(enqueueing: "refresh-validation"))
        #expect(run.status == 78, "\(run.stderr) \(shell.log("nightly.log").suffix(800))")
        #expect(run.stderr == "siwa-jobs nightly: exit 78, see \(shell.directory.path)/nightly.log\n", "\(run.stderr)")
        let log = shell.log("nightly.log")
        #expect(log.contains("SIWA_SAFETY_STOP_PERCENT: expected a percentage"), "\(log.prefix(1500))")
        #expect(try await results(world) == 50, "the drain ran anyway")
        await world.tearDown()
    }

    @Test func theHourlyLineAndTheNightlyUnitSayTheSame() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 40, revokedFraction: 0)
        try await world.database.pool.execute("UPDATE siwa.accounts SET deleted_at = now() WHERE id <= 10")
        let shell = try Shell(world)
        let hourly = try await shell.run(try Self.cronCommand(enqueueing: "revocation-sweep"))
        #expect(hourly.status == 0 && hourly.stderr.isEmpty, "\(hourly.stderr) \(shell.log("hourly.log").suffix(800))")
        let log = shell.log("hourly.log")
        #expect(log.contains("(revocation-sweep) with 10 items") && log.contains("nothing to enqueue: every stored notification"),
                "\(log.prefix(1500))")
        let unit = try Self.unitScript("siwa-jobs-nightly.service")
        let nightly = try await shell.run(unit, exported: true)
        #expect(nightly.status == 0, "\(nightly.stdout) \(nightly.stderr.suffix(800))")
        #expect(nightly.stdout.contains("enqueued job 2 (refresh-validation) with 30 items"), "\(nightly.stdout)")
        let again = try await shell.run(unit, exported: true)
        #expect(again.status == 0 && again.stdout.contains("nothing to enqueue"), "\(again.stdout)")
        let failed = try await Shell(world, overrides: ["SIWA_TEAM_ID": "TYPOO12345"]).run(unit, exported: true)
        #expect(failed.status == 65, "the unit fails (an alert): \(failed.stdout) \(failed.stderr)")
        #expect(failed.stdout.contains("worker: succeeded="), "the drain ran anyway: \(failed.stdout)")
        await world.tearDown()
    }
}

/// Runs a `/bin/sh -c` script to its end, capturing stdout and stderr.
enum ShellScript {
    static func run(_ script: String, environment: [String: String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        async let stdout = out.fileHandleForReading.readToEnd()
        async let stderr = err.fileHandleForReading.readToEnd()
        let (o, e) = try await (stdout, stderr)
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o ?? Data(), as: UTF8.self), String(decoding: e ?? Data(), as: UTF8.self))
    }
}
