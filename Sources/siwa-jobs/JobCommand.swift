import Commands
import Postgres
import SIWAJobs

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
            say("job \(id): \(action == .resume ? "resumed" : "cancelled")")
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
