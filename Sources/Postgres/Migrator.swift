/// Applies migration groups, each migration in its own transaction, recording its name and the
/// SHA-256 of its text in `<schema>.schema_migrations`. Re-running is a no-op; an applied migration
/// whose text has since changed is refused (nothing is applied after it). Concurrent runs
/// serialise on an advisory lock.
///
/// Groups apply in the order given (e.g. the queue's, then the job kinds' that build on it), and
/// the migrations of a group in the order it lists them. Names are unique across all groups: the
/// record is by name alone, so a migration keeps its name, and its checksum, when it changes group.
public struct Migrator: Sendable {
    public let groups: [MigrationGroup]
    /// The schema holding the record table (`schema_migrations`); created if missing.
    public let schema: String
    /// Key of the transaction-scoped advisory lock that serialises migrations.
    public let lockKey: Int64

    /// - Parameters:
    ///   - groups: applied in this order.
    ///   - schema: where `schema_migrations` lives, e.g. `siwa`.
    ///   - lockKey: `pg_advisory_xact_lock` key shared by every migrator of this database.
    public init(groups: [MigrationGroup], schema: String, lockKey: Int64) {
        self.groups = groups
        self.schema = schema
        self.lockKey = lockKey
    }

    /// Every migration, in the order they apply.
    public var migrations: [Migration] { groups.flatMap(\.migrations) }

    /// Applies what is pending.
    /// - Throws: `MigrationError` for a changed migration or a name used twice (`.refused`), or
    ///   when the database records migrations this migrator does not know (`.newerSchema`, before
    ///   anything is applied); `DatabaseError` when a statement fails (that migration's
    ///   transaction is rolled back).
    public func migrate(on connection: PostgresConnection) async throws -> MigrationReport {
        try requireUniqueNames()
        let unknown = try await status(on: connection).unknown
        if !unknown.isEmpty {
            throw MigrationError(
                migration: unknown.joined(separator: ", "),
                message: "is recorded in \(schema).schema_migrations but not shipped by this binary: the database was "
                    + "migrated by a newer release; run that release's migrate (this one changes nothing)",
                kind: .newerSchema)
        }
        try await bootstrap(on: connection)
        var report = MigrationReport()
        for migration in migrations {
            let applied = try await connection.transaction { tx -> Bool in
                try await tx.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
                let recorded = try await tx.query(
                    "SELECT checksum FROM \(identifier: schema).schema_migrations WHERE name = \(migration.name)")
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
                    INSERT INTO \(identifier: schema).schema_migrations (name, checksum) VALUES (\(migration.name), \(checksum))
                    """)
                return true
            }
            if applied { report.applied.append(migration.name) } else { report.alreadyApplied.append(migration.name) }
        }
        return report
    }

    /// How the database's recorded migrations compare with this migrator's.
    public struct Status: Sendable, Equatable {
        /// Known here but not applied.
        public var pending: [String] = []
        /// Applied with a checksum that differs from the text known here.
        public var changed: [String] = []
        /// Applied but unknown here (a newer binary migrated the database).
        public var unknown: [String] = []

        public init(pending: [String] = [], changed: [String] = [], unknown: [String] = []) {
            self.pending = pending
            self.changed = changed
            self.unknown = unknown
        }
    }

    /// Compares recorded migrations with this migrator's (for `doctor` and the worker's preflight).
    /// - Throws: `DatabaseError`.
    public func status(on connection: PostgresConnection) async throws -> Status {
        let exists = try await connection.query(
            "SELECT to_regclass(\(SQL.quoteIdentifier(schema) + ".schema_migrations")) IS NOT NULL AS present")
        guard let present: Bool = try exists.first?.decode("present"), present else {
            return Status(pending: migrations.map(\.name))
        }
        let rows = try await connection.query("SELECT name, checksum FROM \(identifier: schema).schema_migrations")
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

    /// Names of migrations not yet recorded in the database.
    public func pending(on connection: PostgresConnection) async throws -> [String] {
        try await status(on: connection).pending
    }

    private func requireUniqueNames() throws {
        var seen: [String: String] = [:]
        for group in groups {
            for migration in group.migrations {
                if let other = seen.updateValue(group.name, forKey: migration.name) {
                    throw MigrationError(migration: migration.name,
                                         message: "is listed by group '\(other)' and by group '\(group.name)'")
                }
            }
        }
    }

    private func bootstrap(on connection: PostgresConnection) async throws {
        let schema = SQL.quoteIdentifier(self.schema)
        try await connection.transaction { tx in
            try await tx.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            try await tx.simpleQuery(unsafeSQL: """
                CREATE SCHEMA IF NOT EXISTS \(schema);
                CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (
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
