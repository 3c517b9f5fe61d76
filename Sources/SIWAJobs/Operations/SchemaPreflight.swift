import Clocks
import Postgres
import SIWACore

/// The check a long-running command makes before it starts: the database answers, accepts
/// writes, and its schema is this binary's.
public enum SchemaPreflight {
    /// Reads the migration status and whether the session can write (read-only queries, so a
    /// transient failure, such as a connection dropped under it, is retried up to 3 times,
    /// 200 ms × attempt apart; a misconfigured connection is not retried).
    /// - Throws: `DatabaseError` when the database stays unreachable or refuses us (its `meaning`
    ///   says which), or is read-only (`DatabaseError.readOnly`: a hot standby, or
    ///   `default_transaction_read_only` on); `ConfigurationError` when migrations are pending
    ///   (`run 'siwa-jobs migrate'`), an applied one differs from this binary's, or the database
    ///   records migrations this binary does not ship (a newer release migrated it).
    /// - Parameter clock: times the waits between attempts.
    public static func check(pool: PostgresPool, clock: any WallClock) async throws {
        var attempt = 0
        var status: Migrator.Status
        while true {
            do {
                status = try await pool.withConnection { conn in
                    let status = try await Migrator().status(on: conn)
                    if status.pending.isEmpty { try await conn.requireWritable() }
                    return status
                }
                break
            } catch let error as DatabaseError where error.meaning == .transient && attempt < 3 {
                attempt += 1
                try await clock.sleep(for: .milliseconds(200 * attempt))
            }
        }
        if !status.unknown.isEmpty {
            throw ConfigurationError(Self.newerSchemaMessage(status.unknown))
        }
        if !status.pending.isEmpty {
            throw ConfigurationError("migrations not applied (\(status.pending.joined(separator: ", "))): run 'siwa-jobs migrate'")
        }
        if !status.changed.isEmpty {
            throw ConfigurationError("applied migrations differ from this binary's (\(status.changed.joined(separator: ", "))): "
                + "the database and the binary disagree about the schema")
        }
    }

    /// The refusal for a database migrated by a newer release (also `doctor`'s finding).
    static func newerSchemaMessage(_ unknown: [String]) -> String {
        "the database schema is newer than this binary: it records migrations this binary does not ship "
            + "(\(unknown.joined(separator: ", "))); run the release that migrated it (or a newer one)"
    }
}
