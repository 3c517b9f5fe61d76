import Commands
import Postgres
import SIWAJobs

/// What the `transfer` commands share (README "Team transfer runbook"): exit 0 done; 1 refused
/// by the queue (e.g. a job already active) or nothing found; 65 refused data (bad target,
/// closed window, invalid CSV: its bad lines are listed, the first 100); 66 an unreadable file; 64 usage.
enum Transfer {
    /// A malformed date is a usage error naming the flag (64); a real date outside the window is
    /// refused data (65, `TransferWindow`).
    static let transferDate = Declare.option("transfer-date", "YYYY-MM-DD",
                                             .custom("a date as YYYY-MM-DD (UTC, from 1970), the day the recipient team "
                                                     + "accepted the app transfer") { (try? TransferWindow(day: $0)) == nil ? nil : $0 },
                                             help: "the day the app transfer is (or was) accepted; the window closes 60 days later",
                                             required: true)
    static let environment = [EnvironmentDocs.database, EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2],
                              EnvironmentDocs.user] + EnvironmentDocs.logging

    /// Runs `body` with a pool of 2 connections, closed afterwards.
    static func withPool<T: Sendable>(_ context: CommandContext, _ body: (PostgresPool) async throws -> T) async throws -> T {
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 2)
        let result = await Result(catching: { try await body(pool) })
        await pool.close()
        return try result.get()
    }

    static func withEnqueuer<T: Sendable>(_ context: CommandContext, _ body: (Enqueuer) async throws -> T) async throws -> T {
        try await withPool(context) { pool in try await body(Enqueuer(pool: pool, clock: context.clock)) }
    }

    /// `with N items`, `with N canary items; ...`, or why there are none.
    static func planned(_ items: Int, canary: Int, what: String) -> String {
        if items == 0 { return "with no items: nothing to do: all \(what) already have an outcome" }
        if canary > 0 && items < canary { return "with \(items) items (all of them, as the canary)" }
        return canary > 0 ? "with \(items) canary items; the rest is planned when they finish" : "with \(items) items"
    }
}
