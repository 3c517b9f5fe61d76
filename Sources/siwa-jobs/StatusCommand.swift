import Commands
import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs status [--job N] [--sandbox URL]`: progress from the `siwa.job_progress` view; with
/// `--sandbox`, also compares valid/invalid counts with the sandbox's seeded truth.
enum StatusCommand: Command {
    static let sandbox = Declare.option("sandbox", "URL", .string,
                                        help: "compare the last job's valid/invalid counts with this sandbox's truth (exit 1 on mismatch)")

    static let spec = CommandSpec(
        "status", abstract: "job progress from the siwa.job_progress view",
        options: [CommonOptions.job, sandbox, CommonOptions.teamID, CommonOptions.clientID],
        environment: [EnvironmentDocs.database, EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2]] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let jobID = arguments[CommonOptions.job].map(Int64.init)
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let loaded = await Result(catching: { try await JobStatusReport(pool: pool).jobs(jobID: jobID) })
        await pool.close()
        let jobs = try loaded.get()
        guard let last = jobs.last else {
            guard let jobID else {
                say("no jobs yet")
                return .success
            }
            throw CommandFailure("job \(jobID) not found")
        }
        for job in jobs {
            say("job \(job.jobID) \(job.kind) [\(job.state)] items=\(job.items) terminal=\(job.terminal) "
                + "succeeded=\(job.succeeded) failed=\(job.failed) discarded=\(job.discarded) "
                + "available=\(job.available) running=\(job.running) retried=\(job.retried) "
                + "valid=\(job.valid) invalid=\(job.invalid)" + String(format: " elapsed_s=%.1f", job.elapsedSeconds))
            if let reason = job.pausedReason { say("  paused: \(reason)") }
        }
        guard let url = arguments[sandbox] else { return .success }
        let team = try context.configuration.require("SIWA_TEAM_ID", override: arguments[CommonOptions.teamID], flag: "team-id")
        let client = try context.configuration.require("SIWA_CLIENT_ID", override: arguments[CommonOptions.clientID], flag: "client-id")
        let truth = try await SandboxAdminClient(baseURL: url).truth(teamID: team, clientID: client)
        let matches = last.matches(truth: truth)
        say("sandbox truth: valid=\(truth.valid) revoked=\(truth.revoked); job: valid=\(last.valid) invalid=\(last.invalid) "
            + "terminal=\(last.terminal)/\(last.items) -> \(matches ? "MATCH" : "MISMATCH")")
        guard matches else { throw CommandFailure(lines: [], kind: .failed) }   // the line above says why
        return .success
    }
}

extension Result where Failure == any Error {
    /// Captures an async throwing body (so a resource can be closed before the error is rethrown).
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
