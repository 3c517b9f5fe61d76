import Commands
import Postgres
import Queue
import SIWAJobs

/// `siwa-jobs job pause N`: a running job stops being claimed until `job resume N`.
enum JobPauseCommand: Command {
    static let spec = JobAction.spec(.pause, abstract: "pause a running job (items in flight finish; job resume continues it)")

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await JobAction.run(.pause, arguments, context)
    }
}

/// `siwa-jobs job resume N`: a paused job runs again.
enum JobResumeCommand: Command {
    static let spec = JobAction.spec(.resume, abstract: "resume a paused job (after fixing its configuration error, or past its safety stop)")

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await JobAction.run(.resume, arguments, context)
    }
}

/// `siwa-jobs job cancel N`: a running or paused job stops; its unclaimed items are cancelled.
enum JobCancelCommand: Command {
    static let spec = JobAction.spec(.cancel, abstract: "cancel a running or paused job")

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await JobAction.run(.cancel, arguments, context)
    }
}

/// `siwa-jobs job priority N P`: a running or paused job's items are claimed at another priority.
enum JobPriorityCommand: Command {
    static let priority = Declare.argument("P", .integer(in: JobPriority.range),
                                           help: "the new priority: 0 the most urgent ... 9 the least")
    static let spec = CommandSpec(
        "priority", abstract: "change the priority of a running or paused job (its next claims use it)",
        discussion: "Defaults by kind: sign-in \(JobPriority.signIn), notification-processing \(JobPriority.notifications), "
            + "ops jobs (sweeps, transfers, noop) \(JobPriority.operations), refresh-validation \(JobPriority.nightly). "
            + "Items already claimed keep their place.",
        arguments: [JobAction.jobID, priority], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = Int64(try arguments.required(JobAction.jobID))
        let value = try arguments.required(priority)
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let outcome = await Result(catching: { try await JobControl(pool: pool).setPriority(jobID: id, to: value) })
        await pool.close()
        switch try outcome.get() {
        case .changed(let from):
            say("job \(id): priority \(from) -> \(value)")
            return .success
        case .notFound:
            throw CommandFailure("job \(id) not found")
        case .notApplicable(let state):
            throw CommandFailure("job \(id) is \(state), not running or paused")
        }
    }
}

/// What `job resume` and `job cancel` share.
enum JobAction {
    static let jobID = Declare.argument("N", .integer(in: 1...Int.max), help: "the job id")

    static func spec(_ action: JobControl.Action, abstract: String) -> CommandSpec {
        CommandSpec(action.rawValue, abstract: abstract, arguments: [jobID],
                    environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)
    }

    static func run(_ action: JobControl.Action, _ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = Int64(try arguments.required(jobID))
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let outcome = await Result(catching: { try await JobControl(pool: pool).perform(action, jobID: id) })
        await pool.close()
        switch try outcome.get() {
        case .done:
            say("job \(id): \(action == .resume ? "resumed" : action == .pause ? "paused" : "cancelled")")
            return .success
        case .overrodeSafetyStop(let applied):
            say("job \(id): resumed past its safety stop (not stopped by it again); \(applied) held-back invalid verdicts applied")
            return .success
        case .notFound:
            throw CommandFailure("job \(id) not found")
        case .notApplicable(let state):
            throw CommandFailure("job \(id) is \(state), not \(action.requiredStates)")
        }
    }
}
