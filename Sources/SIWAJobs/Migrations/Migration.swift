import Postgres

/// One numbered schema migration from `sql/`, embedded in the binary.
public struct Migration: Sendable, Equatable {
    /// File name, e.g. `0001_core.sql`; migrations apply in name order.
    public let name: String
    /// The file's SQL text.
    public let sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// Why `migrate` refused or failed. `description` is safe to print.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public let migration: String
    public let message: String
    public var description: String { "migration \(migration): \(message)" }
}

/// What `migrate` did.
public struct MigrationReport: Sendable, Equatable {
    public var applied: [String] = []
    public var alreadyApplied: [String] = []
}

/// Applies embedded migrations, each in its own transaction, recording name and SHA-256 checksum
/// in `siwa.schema_migrations`. Re-running is a no-op; an applied file whose text has since changed
/// is refused (no migration is applied after it). Concurrent runs serialise on an advisory lock.
public struct Migrator: Sendable {
    public let migrations: [Migration]

    public init(migrations: [Migration] = Migration.embedded) {
        self.migrations = migrations.sorted { $0.name < $1.name }
    }

    /// Applies what is pending. Throws `MigrationError` for a changed file, `DatabaseError` otherwise.
    public func migrate(on connection: PostgresConnection) async throws -> MigrationReport {
        try await bootstrap(on: connection)
        var report = MigrationReport()
        for migration in migrations {
            let applied = try await connection.transaction { tx -> Bool in
                try await tx.execute("SELECT pg_advisory_xact_lock(\(Self.lockKey))")
                let recorded = try await tx.query(
                    "SELECT checksum FROM siwa.schema_migrations WHERE name = \(migration.name)")
                let checksum = try await Self.checksum(of: migration.sql, on: tx)
                if let row = recorded.first {
                    let stored: String = try row.decode("checksum")
                    guard stored == checksum else {
                        throw MigrationError(
                            migration: migration.name,
                            message: "was applied with checksum \(stored.prefix(12)) but the file now has "
                                + "\(checksum.prefix(12)); applied migrations must never change: "
                                + "restore the original file and add a new migration instead")
                    }
                    return false
                }
                try await tx.simpleQuery(unsafeSQL: migration.sql)
                try await tx.execute("""
                    INSERT INTO siwa.schema_migrations (name, checksum) VALUES (\(migration.name), \(checksum))
                    """)
                return true
            }
            if applied { report.applied.append(migration.name) } else { report.alreadyApplied.append(migration.name) }
        }
        return report
    }

    /// How the database's recorded migrations compare with the embedded ones.
    public struct Status: Sendable, Equatable {
        /// Embedded but not applied.
        public var pending: [String] = []
        /// Applied with a checksum that differs from the embedded text.
        public var changed: [String] = []
        /// Applied but unknown to this binary (a newer binary migrated the database).
        public var unknown: [String] = []
    }

    /// Compares recorded migrations with the embedded ones (for `doctor` and the worker's preflight).
    public func status(on connection: PostgresConnection) async throws -> Status {
        let exists = try await connection.query("SELECT to_regclass('siwa.schema_migrations') IS NOT NULL AS present")
        guard let present: Bool = try exists.first?.decode("present"), present else {
            return Status(pending: migrations.map(\.name))
        }
        let rows = try await connection.query("SELECT name, checksum FROM siwa.schema_migrations")
        var recorded: [String: String] = [:]
        for row in rows { recorded[try row.decode("name")] = try row.decode("checksum") }
        var status = Status()
        for migration in migrations {
            guard let stored = recorded.removeValue(forKey: migration.name) else {
                status.pending.append(migration.name)
                continue
            }
            if stored != (try await Self.checksum(of: migration.sql, on: connection)) { status.changed.append(migration.name) }
        }
        status.unknown = recorded.keys.sorted()
        return status
    }

    /// Names of embedded migrations not yet recorded in the database.
    public func pending(on connection: PostgresConnection) async throws -> [String] {
        try await status(on: connection).pending
    }

    private static let lockKey: Int64 = 0x5157_414A_4F42   // "SIWAJOB"

    private func bootstrap(on connection: PostgresConnection) async throws {
        try await connection.transaction { tx in
            try await tx.execute("SELECT pg_advisory_xact_lock(\(Self.lockKey))")
            try await tx.simpleQuery(unsafeSQL: """
                CREATE SCHEMA IF NOT EXISTS siwa;
                CREATE TABLE IF NOT EXISTS siwa.schema_migrations (
                    name       text PRIMARY KEY,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                """)
        }
    }

    /// SHA-256 hex of the migration text, computed by PostgreSQL so both sides agree on bytes.
    private static func checksum(of sql: String, on connection: PostgresConnection) async throws -> String {
        let rows = try await connection.query("SELECT encode(sha256(convert_to(\(sql), 'UTF8')), 'hex') AS sum")
        guard let row = rows.first else { throw MigrationError(migration: "-", message: "checksum query returned nothing") }
        return try row.decode("sum")
    }
}
