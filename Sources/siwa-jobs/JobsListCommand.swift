import Commands
import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs jobs list [--state S]... [--kind K] [--since WHEN] [--limit N] [--json]`: jobs, newest first.
enum JobsListCommand: Command {
    static let state = Declare.repeated("state", "S", .choice(["running", "paused", "completed", "cancelled"]),
                                        help: "only jobs in this state")
    static let kind = Declare.option("kind", "K", .string, help: "only jobs of this kind, e.g. refresh-validation")
    static let since = Declare.option("since", "WHEN", Since.type,
                                      help: "only jobs created since: a date (2026-11-30, 2026-11-30T18:00:00Z) or an age (90m, 24h, 7d)")
    static let limit = Declare.value("limit", "N", .integer(in: 1...100_000), default: 100, help: "at most this many jobs")
    static let json = Declare.switch("json", help: "a JSON array instead of the table")

    static let spec = CommandSpec(
        "list", abstract: "list jobs, newest first, with their progress",
        discussion: "Columns: id, kind, state, priority, items done of planned, percent, created, finished (UTC). "
            + "A job whose rows were pruned shows its summary's counts.",
        options: [state, kind, since, limit, json], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let filter = JobListing.Filter(states: arguments[state], kind: arguments[kind],
                                       since: arguments[since].map { $0.date(now: context.clock.now) }, limit: arguments[limit])
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let loaded = await Result(catching: { try await JobListing(pool: pool).list(filter) })
        await pool.close()
        let jobs = try loaded.get()
        if arguments[json] { say(JobReports.json(jobs)) } else { JobReports.table(jobs).forEach(say) }
        return .success
    }
}

/// `--since`: a moment, or an age before now.
enum Since: Sendable {
    case at(Date)
    case ago(TimeInterval)

    func date(now: Date) -> Date {
        switch self {
        case .at(let date): date
        case .ago(let seconds): now.addingTimeInterval(-seconds)
        }
    }

    static let type = ValueType<Since>.custom("a date (YYYY-MM-DD or ISO 8601 UTC) or an age such as 90m, 24h, 7d") { text in
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last, let factor = units[unit], let n = Double(text.dropLast()), n >= 0 { return .ago(n * factor) }
        if let date = try? Date(text, strategy: .iso8601) { return .at(date) }
        if let date = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return .at(date) }
        return nil
    }
}
