import Commands
import Postgres
import SIWAJobs

/// `siwa-jobs enqueue refresh-validation`: plan the nightly refresh-token validation.
enum EnqueueRefreshValidation: Command {
    static let maxAttempts = CommonOptions.maxAttempts(default: 5)
    static let spec = Enqueue.teamJobSpec("refresh-validation", abstract: "plan the nightly refresh-token validation (accounts due today)",
                                          maxAttempts: maxAttempts)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await Enqueue.teamJob(spec.name, arguments, context) { enqueuer, target, who in
            try await enqueuer.enqueueRefreshValidation(teamID: target.teamID, clientID: target.clientID, createdBy: who,
                                                        maxAttempts: arguments[maxAttempts])
        }
    }
}

/// `siwa-jobs enqueue revocation-sweep`: revoke the tokens of deleted and consent-revoked accounts.
enum EnqueueRevocationSweep: Command {
    static let maxAttempts = CommonOptions.maxAttempts(default: 5)
    static let spec = Enqueue.teamJobSpec("revocation-sweep", abstract: "revoke tokens of deleted / consent-revoked accounts",
                                          discussion: "Exits 1 while a sweep for the team and client is still active.",
                                          maxAttempts: maxAttempts)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await Enqueue.teamJob(spec.name, arguments, context) { enqueuer, target, who in
            try await enqueuer.enqueueRevocationSweep(teamID: target.teamID, clientID: target.clientID, createdBy: who,
                                                      maxAttempts: arguments[maxAttempts])
        }
    }
}

/// `siwa-jobs enqueue notifications`: the cron backup of `notifications serve`'s planner.
enum EnqueueNotifications: Command {
    static let maxAttempts = CommonOptions.maxAttempts(default: 10)
    static let spec = CommandSpec(
        "notifications", abstract: "plan processing of stored notifications not yet planned (cron backup)",
        discussion: "Also picks up notifications stranded by a receiver that stopped before planning them.",
        options: [maxAttempts, CommonOptions.createdBy], environment: Enqueue.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await Enqueue.run("notifications", arguments, context,
                              nothing: "nothing to enqueue: every stored notification is planned or processed") { enqueuer, who in
            try await enqueuer.enqueueNotificationProcessing(createdBy: who, includeStranded: true,
                                                             maxAttempts: arguments[maxAttempts])
        }
    }
}

/// `siwa-jobs enqueue noop --items N`: the queue benchmark's job.
enum EnqueueNoop: Command {
    static let items = Declare.option("items", "N", .integer(in: 1...10_000_000), help: "how many no-op items", required: true)
    static let spec = CommandSpec(
        "noop", abstract: "plan a no-op job (queue benchmark)",
        options: [items, CommonOptions.createdBy], environment: Enqueue.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let count = try arguments.required(items)
        return try await Enqueue.run("noop", arguments, context) { enqueuer, who in
            try await enqueuer.enqueueNoop(items: count, createdBy: who)
        }
    }
}

/// What the enqueue commands share: one connection, the creator, and the printed line.
enum Enqueue {
    static let environment = [EnvironmentDocs.database, EnvironmentDocs.user] + EnvironmentDocs.logging

    /// A job for one team and client: `--team-id`, `--client-id`, `--max-attempts`, `--created-by`.
    static func teamJobSpec(_ name: String, abstract: String, discussion: String = "", maxAttempts: Option<Int>) -> CommandSpec {
        CommandSpec(name, abstract: abstract, discussion: discussion,
                    options: [CommonOptions.teamID, CommonOptions.clientID, maxAttempts, CommonOptions.createdBy],
                    environment: environment + [EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2]])
    }

    /// `run` for a team job: the team and client from the flags or the environment, checked for shape.
    static func teamJob(_ kind: String, _ arguments: ParsedArguments, _ context: CommandContext,
                        _ plan: @escaping @Sendable (Enqueuer, (teamID: String, clientID: String), String) async throws -> EnqueuedJob)
        async throws -> ExitCode {
        let target = try context.configuration.jobTarget(teamID: arguments[CommonOptions.teamID],
                                                         clientID: arguments[CommonOptions.clientID])
        return try await run(kind, arguments, context) { enqueuer, who in try await plan(enqueuer, target, who) }
    }

    /// Runs `plan` and prints `enqueued job N (kind) with M items`, or `nothing` when there was
    /// nothing to plan (nil from `plan`: exit 0).
    static func run(_ kind: String, _ arguments: ParsedArguments, _ context: CommandContext, nothing: String = "nothing to enqueue",
                    _ plan: @escaping @Sendable (Enqueuer, String) async throws -> EnqueuedJob?) async throws -> ExitCode {
        let who = arguments[CommonOptions.createdBy] ?? context.configuration.operatorName
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let result = await Result(catching: { try await plan(Enqueuer(pool: pool, clock: context.clock), who) })
        await pool.close()
        guard let job = try result.get() else {
            say(nothing)
            return .success
        }
        say("enqueued job \(job.jobID) (\(kind)) with \(job.items) items")
        return .success
    }
}
