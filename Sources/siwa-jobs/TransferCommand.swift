import Commands
import Postgres
import Queue
import SIWACore
import SIWAJobs

/// `siwa-jobs transfer export`: plan the sending team's side of an app transfer.
enum TransferExportCommand: Command {
    static let target = Declare.option("target", "B", CommonOptions.teamIDValue,
                                       help: "the RECIPIENT's 10-character Team ID (never your own)",
                                       required: true)
    static let canary = Declare.value("canary", "N", .integer(in: 0...100_000), default: Enqueuer.defaultCanary,
                                      help: "items planned first; the rest is planned when they succeed (0: all at once)")
    static let retryFailed = Declare.switch("retry-failed", help: "plan again accounts whose earlier exchange failed")
    static let maxAttempts = CommonOptions.maxAttempts(default: 5)
    static let priority = Enqueue.priority(default: JobPriority.operations)

    static let spec = CommandSpec(
        "export", abstract: "plan the sender's exchange of sub for transfer_sub (team A)",
        discussion: "A malformed --team-id, --target or --transfer-date is a usage error (64; SIWA_TEAM_ID malformed: 78). "
            + "Refused (exit 65) for the own team as target, a closed window or a date too far ahead; exit 1 when an "
            + "export for this client and target is already active.",
        options: [CommonOptions.teamID, CommonOptions.clientID, target, Transfer.transferDate, canary, retryFailed,
                  maxAttempts, priority, CommonOptions.createdBy],
        environment: Transfer.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let settings = context.configuration
        let canarySize = arguments[canary]
        let (team, client) = try settings.jobTarget(teamID: arguments[CommonOptions.teamID], clientID: arguments[CommonOptions.clientID])
        let job = try await Transfer.withEnqueuer(context) { enqueuer in
            try await enqueuer.enqueueTransferExport(
                teamID: team, clientID: client,
                target: try arguments.required(target), transferDate: try arguments.required(Transfer.transferDate),
                canary: canarySize, retryFailed: arguments[retryFailed], maxAttempts: arguments[maxAttempts],
                priority: arguments[priority], createdBy: arguments[CommonOptions.createdBy] ?? settings.operatorName)
        }
        say("enqueued job \(job.jobID) (transfer-export) at priority \(job.priority) "
            + Transfer.planned(job.items, canary: canarySize, what: "accounts"))
        return .success
    }
}

/// `siwa-jobs transfer export-csv`: write the hand-off file for the recipient.
enum TransferExportCSVCommand: Command {
    static let job = Declare.option("job", "N", .integer(in: 1...Int.max), help: "the export job", required: true)
    static let out = Declare.option("out", "FILE", .filePath, help: "the file to write (app user id and transfer_sub only)",
                                    required: true)
    static let allowIncomplete = Declare.switch("allow-incomplete", help: "write even though items are not finished yet")
    static let force = Declare.switch("force", help: "replace an existing file")

    static let spec = CommandSpec(
        "export-csv", abstract: "write the hand-off file (external_user_id, transfer_sub) for the recipient team",
        options: [job, out, allowIncomplete, force], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let jobID = Int64(try arguments.required(job))
        let path = try arguments.required(out)
        let file = try await Transfer.withPool(context) { pool in
            try await TransferCSVExporter(pool: pool).write(jobID: jobID, to: path, allowIncomplete: arguments[allowIncomplete],
                                                            overwrite: arguments[force])
        }
        say("wrote \(file.rows) rows to \(PrintableText.quotedPath(path)) for target \(file.target) (refused by Apple, not in the file: \(file.refused); "
            + "not yet exported: \(file.missing))")
        return .success
    }
}

/// `siwa-jobs transfer import-csv FILE`: validate and load a hand-off file (team B).
enum TransferImportCSVCommand: Command {
    static let file = Declare.argument("FILE", .string, help: "the hand-off CSV from the sending team (- reads standard input)")
    static let sourceTeamID = Declare.option("source-team-id", "A", CommonOptions.teamIDValue,
                                             help: "the sending team's ID, when known")

    static let spec = CommandSpec(
        "import-csv", abstract: "validate and load a hand-off file in one transaction (team B)",
        discussion: "Any bad line refuses the whole file with its line number listed (exit 65); nothing is left behind. "
            + "A file that cannot be read exits 66 with the reason.",
        arguments: [file],
        options: [CommonOptions.teamID, CommonOptions.clientID, Transfer.transferDate, sourceTeamID, CommonOptions.createdBy],
        environment: Transfer.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let settings = context.configuration
        let path = try arguments.required(file)
        let (team, client) = try settings.jobTarget(teamID: arguments[CommonOptions.teamID], clientID: arguments[CommonOptions.clientID])
        let report = try await Transfer.withPool(context) { pool in
            try await TransferCSVLoader(pool: pool, clock: context.clock).load(
                path: path, teamID: team, clientID: client,
                sourceTeamID: arguments[sourceTeamID], transferDate: try arguments.required(Transfer.transferDate),
                createdBy: arguments[CommonOptions.createdBy] ?? settings.operatorName)
        }
        report.notes.forEach { say("note: \($0)") }
        let shown = path == "-" ? "-" : PrintableText.quotedPath(path)
        guard let id = report.importID else {
            var lines = report.errors.map { "\(shown): \($0)" }
            if report.errorCount > report.errors.count {
                lines.append("\(shown): ... and \(counted(report.errorCount - report.errors.count, "more error"))")
            }
            lines.append("\(shown): refused (\(counted(report.errorCount, "error"))); nothing was loaded")
            throw CommandFailure(lines: lines, kind: .refusedInput)
        }
        say("loaded import \(id): \(report.rows) rows from \(shown) (\(report.bytes) bytes); "
            + "next: siwa-jobs transfer import --import \(id)")
        return .success
    }
}

/// `siwa-jobs transfer import --import N`: plan the recipient's exchange of transfer_sub for sub.
enum TransferImportCommand: Command {
    static let importID = Declare.option("import", "N", .integer(in: 1...Int.max), help: "the loaded import (from import-csv)",
                                         required: true)

    static let spec = CommandSpec(
        "import", abstract: "plan the recipient's exchange of transfer_sub for the new sub and email (team B)",
        options: [importID, TransferExportCommand.canary, TransferExportCommand.retryFailed, TransferExportCommand.maxAttempts,
                  TransferExportCommand.priority, CommonOptions.createdBy],
        environment: [EnvironmentDocs.database, EnvironmentDocs.user] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = Int64(try arguments.required(importID))
        let canary = arguments[TransferExportCommand.canary]
        let job = try await Transfer.withEnqueuer(context) { enqueuer in
            try await enqueuer.enqueueTransferImport(
                importID: id, canary: canary, retryFailed: arguments[TransferExportCommand.retryFailed],
                maxAttempts: arguments[TransferExportCommand.maxAttempts], priority: arguments[TransferExportCommand.priority],
                createdBy: arguments[CommonOptions.createdBy] ?? context.configuration.operatorName)
        }
        let overlap = try await Transfer.withEnqueuer(context) { try await $0.transferImportOverlap(importID: id, exceptJob: job.jobID) }
        let covered = overlap.reduce(0) { $0 + $1.rows }
        say("enqueued job \(job.jobID) (transfer-import) at priority \(job.priority) "
            + (job.items == 0 && covered > 0 ? "with no items: its rows are another active import's (below)"
                                              : Transfer.planned(job.items, canary: canary, what: "rows")))
        for other in overlap {
            say("note: \(other.rows) rows are also in import \(other.importID), whose job \(other.jobID) is active and exchanges "
                + "them: not planned here (Apple is asked once per user)")
        }
        return .success
    }
}
