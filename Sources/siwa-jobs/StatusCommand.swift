import Commands
import Foundation
import Postgres
import SIWACore
import SIWAJobs

/// `siwa-jobs status [--job N] [--sandbox URL] [--watch]`: progress from the `siwa.job_progress` view
/// of one job, or of the running and paused jobs and those finished in the last 24 hours (`jobs
/// list` shows all); with `--sandbox`, also compares valid/invalid counts with the sandbox's seeded
/// truth; with `--watch`, each job's percentage, rate and ETA every second until interrupted.
enum StatusCommand: Command {
    static let watch = Declare.switch("watch", help: "redraw each job's percentage, rate and ETA every second (JSON lines when not a terminal)")

    static let sandbox = Declare.option("sandbox", "URL", CommonOptions.sandboxURL,
                                        help: "compare the latest refresh validation's valid/invalid counts (or --job's) with this "
                                            + "sandbox's truth (exit 1 on mismatch)")

    static let spec = CommandSpec(
        "status", abstract: "progress of the active and recent jobs (or one job)",
        discussion: "Without --job: running and paused jobs, and those finished in the last 24 hours.",
        options: [CommonOptions.job, sandbox, CommonOptions.teamID, CommonOptions.clientID, watch],
        environment: [EnvironmentDocs.database, EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2], EnvironmentDocs.caFile]
            + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let jobID = arguments[CommonOptions.job].map(Int64.init)
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        if arguments[watch] { return try await watching(jobID: jobID, pool: pool, context: context) }
        let loaded = await Result(catching: { () async throws -> [JobProgress] in
            let report = JobStatusReport(pool: pool)
            if let jobID { return try await report.jobs(jobID: jobID) }
            var jobs: [JobProgress] = []
            for entry in try await JobListing(pool: pool).activeAndRecent() { jobs += try await report.jobs(jobID: entry.id) }
            return jobs
        })
        await pool.close()
        let jobs = try loaded.get()
        guard let last = jobs.last else {
            guard let jobID else {
                say("no active or recent jobs (siwa-jobs jobs list shows every job)")
                return .success
            }
            throw CommandFailure("job \(jobID) not found")
        }
        for job in jobs {
            say("job \(job.jobID) \(IdentifierFormat.printable(job.kind)) [\(job.state)] items=\(job.items) terminal=\(job.terminal) "
                + "succeeded=\(job.succeeded) failed=\(job.failed) discarded=\(job.discarded) "
                + "available=\(job.available) running=\(job.running) retried=\(job.retried) "
                + "valid=\(job.valid) invalid=\(job.invalid)" + String(format: " elapsed_s=%.1f", job.elapsedSeconds))
            // Rows may hold anything a hand-written UPDATE put there: control characters escaped.
            if let reason = job.pausedReason { say("  paused: \(PrintableText.escaped(reason))") }
        }
        guard let url = arguments[sandbox] else { return .success }
        // The truth is about one team's and client's tokens: compare the latest refresh validation
        // shown for them (with --job, that job or none); a later job of another kind (a sign-in)
        // or of another client would always read as a mismatch.
        let (team, client) = try context.configuration.jobTarget(teamID: arguments[CommonOptions.teamID],
                                                                 clientID: arguments[CommonOptions.clientID])
        let validations = jobs.filter { $0.kind == "refresh-validation" }
        guard let compared = validations.last(where: { $0.teamID == team && $0.clientID == client }) else {
            if let jobID {
                throw CommandFailure(last.kind != "refresh-validation"
                    ? "--sandbox: job \(jobID) is a \(IdentifierFormat.printable(last.kind)) job; the sandbox's truth is compared with a refresh-validation job"
                    : "--sandbox: job \(jobID) validates team \(IdentifierFormat.printable(last.teamID ?? "?")) client "
                        + "'\(IdentifierFormat.printable(last.clientID ?? "?"))', not team \(team) "
                        + "client '\(client)' (give --team-id and --client-id, or SIWA_TEAM_ID and SIWA_CLIENT_ID, of its team and client)")
            }
            throw CommandFailure("--sandbox: no refresh-validation job of team \(team) client '\(client)' among these to compare "
                + "with the sandbox's truth (status --job N --sandbox URL compares one)")
        }
        let admin = SandboxAdminClient(baseURL: url, transport: try context.configuration.httpTransport(maxConnectionsPerHost: 4))
        let truth = try await admin.truth(teamID: team, clientID: client)
        let matches = compared.matches(truth: truth)
        say("sandbox truth: valid=\(truth.valid) revoked=\(truth.revoked); job \(compared.jobID): valid=\(compared.valid) "
            + "invalid=\(compared.invalid) terminal=\(compared.terminal)/\(compared.items) -> \(matches ? "MATCH" : "MISMATCH")")
        guard matches else { throw CommandFailure(lines: [], kind: .failed) }   // the line above says why
        return .success
    }
}

extension StatusCommand {
    /// `--watch`: samples until SIGINT/SIGTERM (the default disposition ends the process).
    static func watching(jobID: Int64?, pool: PostgresPool, context: CommandContext) async throws -> ExitCode {
        let listing = JobListing(pool: pool)
        await ProgressLine.run(read: {
            if let jobID { return try await listing.entries(ids: [jobID]) }
            return try await listing.activeAndRecent(recentSeconds: 10)
        }, clock: context.clock)
        await pool.close()
        return .success
    }
}

extension Result where Failure == any Error {
    /// Captures an async throwing body (so a resource can be closed before the error is rethrown).
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
