import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs enqueue refresh-validation [--team-id T --client-id C]` and `enqueue noop --items N`.
enum EnqueueCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["team-id", "client-id", "items", "max-attempts", "created-by"])
        guard args.positionals.count == 1, let kind = args.positionals.first else {
            throw UsageError(message: "enqueue: expected one kind: refresh-validation, revocation-sweep, notifications or noop")
        }
        let who = args.string("created-by") ?? ProcessInfo.processInfo.environment["USER"] ?? "cli"
        let pool = PostgresPool(configuration: settings.postgres, size: 1)
        let result = await Result(catching: { try await enqueue(kind, args: args, who: who, pool: pool, settings: settings) })
        await pool.close()
        if case .failure(let nothing as NothingToEnqueue) = result {
            say(nothing.message)
            return 0
        }
        guard let job = try result.get() else { return 1 }
        say("enqueued job \(job.jobID) (\(kind)) with \(job.items) items")
        return 0
    }

    private static func enqueue(_ kind: String, args: Arguments, who: String, pool: PostgresPool,
                                settings: Settings) async throws -> EnqueuedJob? {
        let enqueuer = Enqueuer(pool: pool)
        let job: EnqueuedJob
        do {
            switch kind {
            case "refresh-validation":
                let (team, client) = try teamAndClient(args, settings: settings)
                job = try await enqueuer.enqueueRefreshValidation(
                    teamID: team, clientID: client, createdBy: who,
                    maxAttempts: try args.int("max-attempts", in: 1...100) ?? 5)
            case "revocation-sweep":
                let (team, client) = try teamAndClient(args, settings: settings)
                job = try await enqueuer.enqueueRevocationSweep(
                    teamID: team, clientID: client, createdBy: who,
                    maxAttempts: try args.int("max-attempts", in: 1...100) ?? 5)
            case "notifications":
                // Picks up notifications no serve process planned, and stranded ones (cron backup).
                guard let planned = try await enqueuer.enqueueNotificationProcessing(
                    createdBy: who, includeStranded: true, maxAttempts: try args.int("max-attempts", in: 1...100) ?? 10) else {
                    throw NothingToEnqueue(message: "nothing to enqueue: every stored notification is planned or processed")
                }
                job = planned
            case "noop":
                guard let items = try args.int("items", in: 1...10_000_000) else {
                    throw UsageError(message: "enqueue noop: --items N is required")
                }
                job = try await enqueuer.enqueueNoop(items: items, createdBy: who)
            default:
                throw UsageError(message: "enqueue: unknown kind '\(kind)' (refresh-validation, revocation-sweep, notifications or noop)")
            }
        } catch let error as EnqueueError {
            SIWAJobsCommand.fail("\(error)")
            return nil
        }
        return job
    }

    /// Team and client ID from flags or the environment, checked for shape.
    private static func teamAndClient(_ args: Arguments, settings: Settings) throws -> (team: String, client: String) {
        let team = try DoctorCommand.format(try settings.require("SIWA_TEAM_ID", flag: "team-id", arguments: args),
                                            "SIWA_TEAM_ID / --team-id", what: "team ID")
        let client = try settings.require("SIWA_CLIENT_ID", flag: "client-id", arguments: args)
        guard !client.contains(where: \.isWhitespace), client != team else {
            throw ConfigError(message: "SIWA_CLIENT_ID / --client-id '\(client)' is not a client ID (App ID or Services ID)")
        }
        return (team, client)
    }
}

extension Result where Failure == any Error {
    /// Captures an async throwing body.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Planning found nothing to do: not an error (exit 0).
struct NothingToEnqueue: Error {
    let message: String
}
