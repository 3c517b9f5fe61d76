import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs transfer ...`: the app-transfer runbook's commands (README "Team transfer runbook").
///
/// Exit codes: 0 done; 1 refused by the queue (e.g. a job already active) or nothing found;
/// 65 refused data (bad target, closed window, invalid CSV: every bad line is listed); 64 usage.
enum TransferCommand {
    static let usage = """
        transfer export --team-id A --client-id C --target B --transfer-date YYYY-MM-DD [--canary N] [--retry-failed]
        transfer export-csv --job N --out FILE [--allow-incomplete]
        transfer import-csv FILE --team-id B --client-id C --transfer-date YYYY-MM-DD [--source-team-id A]
        transfer import --import N [--canary N] [--retry-failed]
        transfer status [--job N]
        transfer lookup --team-id B --transfer-sub X
        transfer release --job N
        """

    static let valueFlags: Set<String> = [
        "team-id", "client-id", "target", "transfer-date", "canary", "max-attempts", "job", "out", "source-team-id",
        "import", "transfer-sub", "created-by",
    ]

    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: valueFlags, switchFlags: ["retry-failed", "allow-incomplete", "force"])
        guard let action = args.positionals.first else {
            throw UsageError(message: "transfer: expected an action:\n" + usage)
        }
        let who = args.string("created-by") ?? ProcessInfo.processInfo.environment["USER"] ?? "cli"
        let pool = PostgresPool(configuration: settings.postgres, size: 2)
        let result = await Result(catching: { () async throws -> Int32 in
            do {
                return try await perform(action, args: args, who: who, pool: pool, settings: settings)
            } catch let error as TransferRuleError {
                SIWAJobsCommand.fail("refused: \(error)")
                return 65
            } catch let error as EnqueueError {
                SIWAJobsCommand.fail("\(error)")
                return 1
            }
        })
        await pool.close()
        return try result.get()
    }

    private static func perform(_ action: String, args: Arguments, who: String, pool: PostgresPool,
                                settings: Settings) async throws -> Int32 {
        let enqueuer = Enqueuer(pool: pool)
        switch action {
        case "export":
            try expectPositionals(args, 1, action)
            let canary = try args.int("canary", in: 0...100_000) ?? Enqueuer.defaultCanary
            let job = try await enqueuer.enqueueTransferExport(
                teamID: try settings.require("SIWA_TEAM_ID", flag: "team-id", arguments: args),
                clientID: try settings.require("SIWA_CLIENT_ID", flag: "client-id", arguments: args),
                target: try required(args, "target"), transferDate: try required(args, "transfer-date"),
                canary: canary, retryFailed: args.flag("retry-failed"),
                maxAttempts: try args.int("max-attempts", in: 1...100) ?? 5, createdBy: who)
            say("enqueued job \(job.jobID) (transfer-export) \(planned(job.items, canary: canary, what: "accounts"))")
            return 0
        case "export-csv":
            try expectPositionals(args, 1, action)
            guard let job = try args.int("job", in: 1...Int.max) else { throw UsageError(message: "transfer export-csv: --job N is required") }
            let out = try required(args, "out")
            let file = try await TransferCSVExporter(pool: pool).write(jobID: Int64(job), to: out,
                                                                       allowIncomplete: args.flag("allow-incomplete"),
                                                                       overwrite: args.flag("force"))
            say("wrote \(file.rows) rows to \(out) for target \(file.target) (refused by Apple, not in the file: \(file.refused); "
                + "not yet exported: \(file.missing))")
            return 0
        case "import-csv":
            try expectPositionals(args, 2, action, what: "FILE")
            let path = args.positionals[1]
            let report = try await TransferCSVLoader(pool: pool).load(
                path: path, teamID: try settings.require("SIWA_TEAM_ID", flag: "team-id", arguments: args),
                clientID: try settings.require("SIWA_CLIENT_ID", flag: "client-id", arguments: args),
                sourceTeamID: args.string("source-team-id"), transferDate: try required(args, "transfer-date"), createdBy: who)
            report.notes.forEach { say("note: \($0)") }
            guard let id = report.importID else {
                report.errors.forEach { SIWAJobsCommand.fail("\(path): \($0)") }
                if report.errorCount > report.errors.count {
                    SIWAJobsCommand.fail("\(path): ... and \(report.errorCount - report.errors.count) more errors")
                }
                SIWAJobsCommand.fail("\(path): refused (\(report.errorCount) errors); nothing was loaded")
                return 65
            }
            say("loaded import \(id): \(report.rows) rows from \(path) (\(report.bytes) bytes); "
                + "next: siwa-jobs transfer import --import \(id)")
            return 0
        case "import":
            try expectPositionals(args, 1, action)
            guard let id = try args.int("import", in: 1...Int.max) else { throw UsageError(message: "transfer import: --import N is required") }
            let canary = try args.int("canary", in: 0...100_000) ?? Enqueuer.defaultCanary
            let job = try await enqueuer.enqueueTransferImport(
                importID: Int64(id), canary: canary,
                retryFailed: args.flag("retry-failed"), maxAttempts: try args.int("max-attempts", in: 1...100) ?? 5, createdBy: who)
            say("enqueued job \(job.jobID) (transfer-import) \(planned(job.items, canary: canary, what: "rows"))")
            return 0
        case "status":
            try expectPositionals(args, 1, action)
            return try await TransferStatusPrinter.run(pool: pool, jobID: try args.int("job", in: 1...Int.max).map(Int64.init))
        case "lookup":
            try expectPositionals(args, 1, action)
            return try await TransferStatusPrinter.lookup(pool: pool, teamID: try settings.require("SIWA_TEAM_ID", flag: "team-id", arguments: args),
                                                          transferSub: try required(args, "transfer-sub"))
        case "release":
            try expectPositionals(args, 1, action)
            guard let job = try args.int("job", in: 1...Int.max) else { throw UsageError(message: "transfer release: --job N is required") }
            let planned = try await enqueuer.releaseTransferCanary(jobID: Int64(job))
            say("job \(job): canary gate opened, \(planned) more items planned")
            return 0
        default:
            throw UsageError(message: "transfer: unknown action '\(action)':\n" + usage)
        }
    }

    private static func planned(_ items: Int, canary: Int, what: String) -> String {
        if items == 0 { return "with no items: nothing to do: all \(what) already have an outcome" }
        if canary > 0 && items < canary { return "with \(items) items (all of them, as the canary)" }
        return canary > 0 ? "with \(items) canary items; the rest is planned when they finish" : "with \(items) items"
    }

    private static func required(_ args: Arguments, _ flag: String) throws -> String {
        guard let v = args.string(flag), !v.isEmpty else { throw UsageError(message: "--\(flag) is required") }
        return v
    }

    private static func expectPositionals(_ args: Arguments, _ count: Int, _ action: String, what: String? = nil) throws {
        if args.positionals.count < count { throw UsageError(message: "transfer \(action): \(what ?? "an argument") is required") }
        if args.positionals.count > count {
            throw UsageError(message: "transfer \(action): unexpected argument '\(args.positionals[count])'")
        }
    }
}
