import Foundation
import Postgres

/// Reads what the dashboard shows, as the `siwa_dashboard` role: every page's statements run in
/// one `BEGIN READ ONLY` transaction that first does `SET LOCAL ROLE siwa_dashboard` (with a 5 s
/// `statement_timeout`), so whatever login the process connected with, a page can read only the
/// views that role is granted (sql/0019_dashboard_views.sql) and write nothing. Values are
/// formatted by the database (`YYYY-MM-DD HH24:MI:SS`, UTC) so pages only print text.
public struct DashboardReader: Sendable {
    /// The role pages read as.
    public static let role = "siwa_dashboard"
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Runs `body` as `siwa_dashboard`, read-only. Rows come back as text by column name.
    /// - Throws: `DatabaseError` (e.g. `permission` when the login is not a member of the role).
    public func read<T: Sendable>(_ body: (Session) async throws -> T) async throws -> T {
        try await pool.withConnection { conn in
            try await conn.transaction(begin: "BEGIN READ ONLY") { conn in
                try await conn.simpleQuery(unsafeSQL: "SET LOCAL ROLE \(Self.role); SET LOCAL statement_timeout = '5s'")
                return try await body(Session(connection: conn))
            }
        }
    }

    /// Checks at startup that the role can be taken and the views read.
    /// - Throws: `DatabaseError` saying why not.
    public func check() async throws {
        try await read { session in _ = try await session.rows("SELECT 1 FROM siwa.dashboard_jobs LIMIT 1") }
    }

    /// One page's statements.
    public struct Session {
        let connection: PostgresConnection

        /// The rows of `sql`, each column as text (NULL as nil).
        public func rows(_ sql: SQL) async throws -> [[String: String]] {
            try await connection.query(sql).map { row in
                var values: [String: String] = [:]
                for column in row.columns where !row.isNull(column) {
                    values[column] = try row.decode(column, as: String.self)
                }
                return values
            }
        }
    }
}
