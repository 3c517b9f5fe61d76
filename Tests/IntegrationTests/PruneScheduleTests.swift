import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// The shipped prune schedule (jobs/crontab.example's prune line, jobs/siwa-jobs-prune.service),
/// run as written with the binary's path put in: it prunes, and exits 0.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PruneScheduleTests {
    @Test func theCronLineAndTheUnitPrune() async throws {
        let db = try await TestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-prune-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let variables = db.environment.filter { $0.key.hasPrefix("PG") }
        try Data((variables.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(separator: "\n") + "\n").utf8)
            .write(to: directory.appendingPathComponent("env"))
        func put(_ command: String) -> String {
            command.replacingOccurrences(of: "/usr/local/bin/siwa-jobs ", with: "siwa-jobs ")
                .replacingOccurrences(of: "siwa-jobs prune", with: "'\(BinaryProcess.binaryPath)' prune")
                .replacingOccurrences(of: "/etc/siwa-jobs/env", with: directory.appendingPathComponent("env").path)
                .replacingOccurrences(of: "/var/log/siwa-jobs/", with: directory.path + "/")
        }
        // A job finished 40 days ago, in its own partition (a later job exists).
        let old = try await RetentionTests.enqueueNoop(db, items: 5)
        try await RetentionTests.drainNoop(db)
        try await db.pool.execute("UPDATE siwa.jobs SET created_at = now() - interval '41 days', finished_at = now() - interval '40 days' WHERE id = \(old)")
        _ = try await RetentionTests.enqueueNoop(db, items: 1)

        let crontab = try String(contentsOf: CronTests.jobs.appendingPathComponent("crontab.example"), encoding: .utf8)
        let line = try #require(crontab.split(separator: "\n").first { !$0.hasPrefix("#") && $0.contains("siwa-jobs prune") })
        var command = Substring(line)
        for _ in 0..<6 { command = command.drop { $0 != " " }.drop { $0 == " " } }   // minute hour day month weekday user
        let cron = try await ShellScript.run(put(String(command)), environment: ["PATH": "/usr/bin:/bin", "HOME": directory.path])
        let log = (try? String(contentsOf: directory.appendingPathComponent("prune.log"), encoding: .utf8)) ?? ""
        #expect(cron.status == 0 && cron.stderr.isEmpty, "\(cron.stderr) \(log)")
        #expect(log.contains("dropped partition j\(old): 1 jobs, 5 items"), "\(log)")

        let unit = try String(contentsOf: CronTests.jobs.appendingPathComponent("siwa-jobs-prune.service"), encoding: .utf8)
        let exec = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=/bin/sh -c '") })
        let script = String(exec.dropFirst("ExecStart=/bin/sh -c '".count).dropLast()).replacingOccurrences(of: "$$", with: "$")
        let timer = try String(contentsOf: CronTests.jobs.appendingPathComponent("siwa-jobs-prune.timer"), encoding: .utf8)
        #expect(timer.contains("OnCalendar=") && unit.contains("SuccessExitStatus=75"))
        let run = try await ShellScript.run(put(script), environment: ["PATH": "/usr/bin:/bin"].merging(variables) { $1 })
        #expect(run.status == 0 && run.stdout.contains("partitions dropped 0"), "\(run.stdout) \(run.stderr)")
        try? FileManager.default.removeItem(at: directory)
        await db.drop()
    }
}
