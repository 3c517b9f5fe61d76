import Clocks
import Postgres
import SIWACore

/// The check a long-running command makes before it starts: the database answers and its
/// schema is this binary's.
public enum SchemaPreflight {
    /// Reads the migration status (read-only, so a connection dropped under it is retried up to
    /// 3 times, 200 ms × attempt apart).
    /// - Throws: `DatabaseError` when the database stays unreachable (or refuses us);
    ///   `ConfigurationError` when migrations are pending (`run 'siwa-jobs migrate'`) or an
    ///   applied one differs from this binary's.
    /// - Parameter clock: times the waits between attempts.
    public static func check(pool: PostgresPool, clock: any WallClock) async throws {
        var attempt = 0
        var status: Migrator.Status
        while true {
            do {
                status = try await pool.withConnection { conn in try await Migrator().status(on: conn) }
                break
            } catch let error as DatabaseError where error.isConnectionLoss && attempt < 3 {
                attempt += 1
                try await clock.sleep(for: .milliseconds(200 * attempt))
            }
        }
        if !status.pending.isEmpty {
            throw ConfigurationError("migrations not applied (\(status.pending.joined(separator: ", "))): run 'siwa-jobs migrate'")
        }
        if !status.changed.isEmpty {
            throw ConfigurationError("applied migrations differ from this binary's (\(status.changed.joined(separator: ", "))): "
                + "the database and the binary disagree about the schema")
        }
    }
}
