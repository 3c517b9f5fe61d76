import Commands
import Postgres
import Queue
import SIWAJobs

/// `siwa-jobs enqueue refresh-validation`: plan the nightly refresh-token validation.
enum EnqueueRefreshValidation: Command {
    static let maxAttempts = CommonOptions.maxAttempts(default: 5)
    static let priority = Enqueue.priority(default: JobPriority.nightly)
    static let spec = Enqueue.teamJobSpec("refresh-validation", abstract: "plan the nightly refresh-token validation (accounts due today)",
                                          maxAttempts: maxAttempts, priority: priority)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await Enqueue.teamJob(spec.name, arguments, context) { enqueuer, target, who, rule in
            try await enqueuer.enqueueRefreshValidation(teamID: target.teamID, clientID: target.clientID, createdBy: who,
                                                        maxAttempts: arguments[maxAttempts], priority: arguments[priority],
                                                        safetyStop: rule)
        }
    }
}

/// `siwa-jobs enqueue revocation-sweep`: revoke the tokens of deleted and consent-revoked accounts.
enum EnqueueRevocationSweep: Command {
    static let maxAttempts = CommonOptions.maxAttempts(default: 5)
    static let priority = Enqueue.priority(default: JobPriority.operations)
    static let spec = Enqueue.teamJobSpec("revocation-sweep", abstract: "revoke tokens of deleted / consent-revoked accounts",
                                          maxAttempts: maxAttempts, priority: priority)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await Enqueue.teamJob(spec.name, arguments, context) { enqueuer, target, who, rule in
            try await enqueuer.enqueueRevocationSweep(teamID: target.teamID, clientID: target.clientID, createdBy: who,
                                                      maxAttempts: arguments[maxAttempts], priority: arguments[priority],
                                                      safetyStop: rule)
        }
    }
}

/// `siwa-jobs enqueue notifications`: the cron backup of `notifications serve`'s planner.
enum EnqueueNotifications: Command {
    static let maxAttempts = CommonOptions.maxAttempts(default: 10)
    static let priority = Enqueue.priority(default: JobPriority.notifications)
    static let spec = CommandSpec(
        "notifications", abstract: "plan processing of stored notifications not yet planned (cron backup)",
        discussion: "Also picks up notifications stranded by a receiver that stopped before planning them.",
        options: [maxAttempts, priority, CommonOptions.createdBy], environment: Enqueue.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        try await Enqueue.run("notifications", arguments, context,
                              nothing: "nothing to enqueue: every stored notification is planned or processed") { enqueuer, who in
            try await enqueuer.enqueueNotificationProcessing(createdBy: who, includeStranded: true,
                                                             maxAttempts: arguments[maxAttempts], priority: arguments[priority])
        }
    }
}

/// `siwa-jobs enqueue noop --items N`: the queue benchmark's job.
enum EnqueueNoop: Command {
    static let items = Declare.option("items", "N", .integer(in: 1...10_000_000), help: "how many no-op items", required: true)
    static let priority = Enqueue.priority(default: JobPriority.operations)
    static let spec = CommandSpec(
        "noop", abstract: "plan a no-op job (queue benchmark)",
        options: [items, priority, CommonOptions.createdBy], environment: Enqueue.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let count = try arguments.required(items)
        return try await Enqueue.run("noop", arguments, context) { enqueuer, who in
            try await enqueuer.enqueueNoop(items: count, priority: arguments[priority], createdBy: who)
        }
    }
}

/// What the enqueue commands share: one connection, the creator, and the printed line.
enum Enqueue {
    static let environment = [EnvironmentDocs.database, EnvironmentDocs.user] + EnvironmentDocs.logging

    static let safetyStop = Declare.option(
        "safety-stop", "PERCENT", .custom(SafetyStopRule.accepted, summary: "0...99|off") { SafetyStopRule(parsing: $0) },
        help: "pause the job when more than PERCENT of its first 200 results are invalid_grant (0 or off: never)",
        environment: ["SIWA_SAFETY_STOP_PERCENT"], defaultText: "50")

    /// `--priority P` with a kind's default (`JobPriority`).
    static func priority(default value: Int) -> Option<Int> {
        Declare.value("priority", "P", .integer(in: JobPriority.range), default: value,
                      help: "the job's priority: 0 the most urgent ... 9 the least; more urgent jobs' items are claimed first, "
                          + "jobs of equal priority share the workers fairly")
    }

    /// A job for one team and client: `--team-id`, `--client-id`, `--max-attempts`, `--priority`, `--safety-stop`, `--created-by`.
    static func teamJobSpec(_ name: String, abstract: String, maxAttempts: Option<Int>, priority: Option<Int>) -> CommandSpec {
        CommandSpec(name, abstract: abstract,
                    discussion: "An active job for the team and client is reported (already active: job N) and left to the worker; "
                        + "no job is created when no account is due (exit 0). A team or client without any account is refused "
                        + "as a likely typo (exit 65).",
                    options: [CommonOptions.teamID, CommonOptions.clientID, maxAttempts, priority, safetyStop, CommonOptions.createdBy],
                    environment: environment + [EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2], EnvironmentDocs.safetyStop])
    }

    /// `run` for a team job: the team and client from the flags or the environment, checked for
    /// shape, and the safety stop from `--safety-stop` or the environment.
    static func teamJob(_ kind: String, _ arguments: ParsedArguments, _ context: CommandContext,
                        _ plan: @escaping @Sendable (Enqueuer, (teamID: String, clientID: String), String, SafetyStopRule)
                            async throws -> EnqueuedJob?) async throws -> ExitCode {
        let target = try context.configuration.jobTarget(teamID: arguments[CommonOptions.teamID],
                                                         clientID: arguments[CommonOptions.clientID])
        let rule = try context.configuration.safetyStopRule(flag: arguments[safetyStop])
        let nothing = "nothing to enqueue: no account of team \(target.teamID) and client \(target.clientID) is due "
            + "(each is validated at most once a day, and only while it holds a token not known invalid)"
        return try await run(kind, arguments, context, nothing: kind == "revocation-sweep"
            ? "nothing to enqueue: no deleted or consent-revoked account of team \(target.teamID) and client \(target.clientID) holds a token"
            : nothing) { enqueuer, who in try await plan(enqueuer, target, who, rule) }
    }

    /// Runs `plan` and prints `enqueued job N (kind) with M items` (and its safety stop), `already
    /// active: job N` for a job still running or paused, or `nothing` when there was nothing to
    /// plan (nil from `plan`); each exits 0.
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
        if job.alreadyActive {
            say("already active: job \(job.jobID) (\(kind), \(job.items) items); no new job: the worker drains it "
                + "(siwa-jobs status --job \(job.jobID))")
            return .success
        }
        say("enqueued job \(job.jobID) (\(kind)) with \(job.items) items at priority \(job.priority)")
        if let safety = job.safetyStop { say(safety.summary) }
        return .success
    }
}
