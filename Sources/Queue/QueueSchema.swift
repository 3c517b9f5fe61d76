import EmbeddedSQL
import Postgres

/// The queue's schema and its migration group, as swift-jobs-postgres keeps its tables in its own
/// group. A `Migrator` applies this group before the job kinds' groups, which build on it.
///
/// The queue's tables, in schema `siwa`: `jobs` (one request; `state` is a `JobState`),
/// `job_items` (the per-item units the worker claims and leases; `state` is an `ItemState`),
/// `results` (at most one row per item, by key) and `audit_log` (append-only).
///
/// Ownership of `0001_core.sql`: it predates the split of the schema by owner. Besides the queue's
/// tables it creates `siwa.accounts` (the job kinds' table, which `job_items.account_id` and
/// `results.account_id` reference) and two kind-owned columns of `results`, `apple_error` and
/// `token_fingerprint`, which the kinds declare as their `ResultColumn`s. Its text cannot change:
/// its checksum is recorded in every database migrated so far. The queue group carries it whole,
/// because the queue cannot run without its tables; every later migration (`0002` onwards)
/// belongs to the kinds' group (`SIWASchema` in SIWAJobs), and new queue migrations go here.
public enum QueueSchema {
    /// The schema of the queue's tables and of the migration record (`siwa.schema_migrations`).
    public static let schema = "siwa"

    /// The queue's migrations, in the order they apply.
    public static let migrations = MigrationGroup(name: "queue", migrations: [
        Migration(name: SQLFile.m0001_core.name, sql: SQLFile.m0001_core.migrationText),
    ])
}
