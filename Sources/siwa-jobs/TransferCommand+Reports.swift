import Commands
import SIWACore
import SIWAJobs

/// `siwa-jobs transfer status [--job N]`: window, canary and counts of transfer jobs.
enum TransferStatusCommand: Command {
    static let spec = CommandSpec(
        "status", abstract: "window, canary and item counts of transfer jobs (siwa.transfer_status)",
        options: [CommonOptions.job], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let jobID = arguments[CommonOptions.job].map(Int64.init)
        let jobs = try await Transfer.withPool(context) { pool in try await TransferStatusReport(pool: pool).jobs(jobID: jobID) }
        guard !jobs.isEmpty else { throw CommandFailure(jobID.map { "no transfer job \($0): it does not exist or is of another kind" } ?? "no transfer jobs") }
        jobs.forEach(show)
        return .success
    }

    private static func show(_ job: TransferJobStatus) {
        let export = job.direction == "export"
        say("job \(job.jobID) transfer-\(job.direction) [\(job.jobState)] team=\(job.teamID) client=\(job.clientID) "
            + (export ? "target=\(job.peerTeamID ?? "")" : "source=\(job.peerTeamID ?? "-")"))
        let left = job.daysLeft
        say("  window: transfer date \(job.transferDate), closes \(job.windowClosesOn), "
            + (left >= 0 ? "\(min(left, 60)) days left" + (left > 60 ? " (transfer not yet accepted)" : "")
                         : "CLOSED \(-left) days ago: transfer the app back, then transfer it again and run again"))
        if job.items == 0 {
            say("  nothing to do: all \(export ? "accounts" : "rows") already had an outcome when the job was planned")
        } else if job.canarySize == 0 {
            say("  canary: none (all items planned at once)")
        } else {
            say("  canary: \(job.canarySize) items, \(job.canarySucceeded) succeeded, "
                + (job.released ? "rest planned" : "\(job.canaryRemaining) not finished, rest not planned yet"))
        }
        say("  items=\(job.items) succeeded=\(job.succeeded) failed=\(job.failed) "
            + "discarded=\(job.discarded) available=\(job.available) running=\(job.running)")
        if let reason = job.pausedReason { say("  paused: \(PrintableText.escaped(reason))") }
    }
}

/// `siwa-jobs transfer lookup --team-id B --transfer-sub X`: the account a sign-in's transfer_sub maps to.
enum TransferLookupCommand: Command {
    static let transferSub = Declare.option("transfer-sub", "X", .string, help: "the transfer_sub from the sign-in", required: true)

    static let spec = CommandSpec(
        "lookup", abstract: "find the account for a transfer_sub (sign-ins during the window)",
        options: [CommonOptions.teamID, transferSub],
        environment: [EnvironmentDocs.database, EnvironmentDocs.singleTeam[0]] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let team = try context.configuration.require("SIWA_TEAM_ID", override: arguments[CommonOptions.teamID], flag: "team-id")
        let sub = try arguments.required(transferSub)
        let found = try await Transfer.withPool(context) { pool in
            try await TransferStatusReport(pool: pool).lookup(teamID: team, transferSub: sub)
        }
        guard let found else { throw CommandFailure("no account for this transfer_sub in team \(team)") }
        say("account \(found.accountID.map(String.init) ?? "-") external_user_id=\(found.externalUserID) "
            + "team=\(found.teamID) via=\(found.matchedVia) days_left=\(found.daysLeft.map(String.init) ?? "-")")
        return .success
    }
}

/// `siwa-jobs transfer release --job N`: open a canary gate by hand.
enum TransferReleaseCommand: Command {
    static let job = Declare.option("job", "N", .integer(in: 1...Int.max), help: "the transfer job", required: true)

    static let spec = CommandSpec(
        "release", abstract: "open a job's canary gate: plan the rest of its items now",
        options: [job], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = try arguments.required(job)
        let planned = try await Transfer.withEnqueuer(context) { enqueuer in try await enqueuer.releaseTransferCanary(jobID: Int64(id)) }
        say("job \(id): canary gate opened, \(planned) more items planned")
        return .success
    }
}
