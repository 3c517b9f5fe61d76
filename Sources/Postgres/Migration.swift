/// One numbered schema migration: a name (`0001_core.sql`) and the SQL text that is run and
/// checksummed.
public struct Migration: Sendable, Equatable {
    /// File name, e.g. `0001_core.sql`. Unique across every group a `Migrator` applies.
    public let name: String
    /// The SQL text. Its SHA-256 is recorded when it is applied; it must never change afterwards.
    public let sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// The migrations one module owns (cf. swift-jobs-postgres's `DatabaseMigrationGroup`): the
/// queue's tables, or the job kinds' tables, views and triggers. A `Migrator` applies its groups in
/// the order given, and each group's migrations in the order listed.
public struct MigrationGroup: Sendable, Equatable {
    /// The group's name, for reports and errors (e.g. `queue`, `siwa`).
    public let name: String
    public let migrations: [Migration]

    public init(name: String, migrations: [Migration]) {
        self.name = name
        self.migrations = migrations
    }
}

/// Why `migrate` refused or failed. `description` is safe to print.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// A migration this binary ships is refused: its applied text changed, or its name is
        /// listed twice.
        case refused
        /// The database records migrations this binary does not ship: a newer release (or
        /// another build) migrated it, so this binary must not touch its schema.
        case newerSchema
    }

    public let kind: Kind
    /// The migration concerned, or `-` when none is.
    public let migration: String
    public let message: String

    public init(migration: String, message: String, kind: Kind = .refused) {
        self.kind = kind
        self.migration = migration
        self.message = message
    }

    public var description: String { "migration \(migration): \(message)" }
}

/// What `migrate` did, by migration name.
public struct MigrationReport: Sendable, Equatable {
    public var applied: [String] = []
    public var alreadyApplied: [String] = []

    public init(applied: [String] = [], alreadyApplied: [String] = []) {
        self.applied = applied
        self.alreadyApplied = alreadyApplied
    }
}
