import Commands
import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs job show N [--json]`: counts by state and outcome, top Apple errors, timings,
/// throughput and ETA.
enum JobShowCommand: Command {
    static let json = Declare.switch("json", help: "one JSON object instead of text")
    static let spec = CommandSpec(
        "show", abstract: "show one job: counts by state and outcome, top Apple errors, timings, throughput, ETA",
        discussion: "Throughput is the results of the last 60 s (else the average since the first result); the ETA divides "
            + "the items left by it. A pruned job shows its summary.",
        arguments: [JobAction.jobID], options: [json], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = Int64(try arguments.required(JobAction.jobID))
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let loaded = await Result(catching: { try await JobListing(pool: pool).detail(jobID: id) })
        await pool.close()
        guard let detail = try loaded.get() else { throw CommandFailure("job \(id) not found") }
        if arguments[json] { say(JobReports.json(detail)) } else { JobReports.lines(detail).forEach(say) }
        return .success
    }
}

/// `siwa-jobs job retry N [--outcome failed|discarded] [--apple-error E] [--json]`: those items run
/// again with fresh attempts; their old results move to `siwa.result_history`.
enum JobRetryCommand: Command {
    static let outcome = Declare.option("outcome", "O", .choice(["failed", "discarded"]),
                                        help: "only items that ended so (default: both)")
    static let appleError = Declare.option("apple-error", "E", .string, help: "only items whose result has this Apple error, e.g. invalid_grant")
    static let json = Declare.switch("json", help: "one JSON object instead of text")
    static let spec = CommandSpec(
        "retry", abstract: "make a job's failed or discarded items due again with fresh attempts (any kind)",
        discussion: "The items become available now with attempt 0. Each one's old result moves to siwa.result_history "
            + "(kept, with superseded_at); the new attempt writes a fresh result. A completed job runs again; "
            + "a cancelled one is refused.",
        arguments: [JobAction.jobID], options: [outcome, appleError, json],
        environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = Int64(try arguments.required(JobAction.jobID))
        let selection = JobControl.RetrySelection(states: arguments[outcome].map { [$0] } ?? ["failed", "discarded"],
                                                  appleError: arguments[appleError])
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let outcome = await Result(catching: { try await JobControl(pool: pool).retry(jobID: id, selection) })
        await pool.close()
        switch try outcome.get() {
        case .retried(let items, let reopened):
            if arguments[json] {
                say("{\"job_id\":\(id),\"items\":\(items),\"reopened\":\(reopened)}")
            } else {
                say("job \(id): \(items) items due again" + (reopened ? "; the job runs again" : ""))
            }
            return .success
        case .notFound:
            throw CommandFailure("job \(id) not found")
        case .notApplicable(let state):
            throw CommandFailure("job \(id) is \(state): only completed, running or paused jobs can be retried")
        case .activeDuplicate:
            throw CommandFailure("job \(id) cannot run again: another job for the same target is active; let it finish first")
        }
    }
}
