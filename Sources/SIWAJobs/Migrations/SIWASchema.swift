import EmbeddedSQL
import Postgres
import Queue

/// The job kinds' migration group: everything in sql/ after the queue's `0001_core.sql` —
/// dashboard views, roles, transfer tables and triggers, the notification inbox and its fixes,
/// least-privilege roles, the safety stops of validations and sweeps, the Apple rate budget
/// (`0013`), the live worker registry (`0015`), the sign-in inbox (`0016`), credential state (`0017`), retention
/// (`0018`), the dashboard's views (`0019`), the hardening of issue #13 (`0020`), the leased-items index, the
/// per-job progress view and the queue tables without row-by-row foreign keys of issue #12
/// (`0021`-`0023`), the worker role's use of the accounts' sequence (`0024`, for the sign-in's one-statement
/// write), job summaries written by prune instead of a trigger (`0025`), claims by range (`0026`), item partitions
/// filled to 40% so every range completion is HOT (`0027`), succeeded range items that keep their row
/// (`0028`), and the queue's later columns and indexes
/// (`0010_retry_budget.sql`, `0014_priority_claim.sql`: listed here so files apply in name order).
/// It builds on the queue's tables, so a `Migrator` applies `QueueSchema.migrations` first (see
/// `QueueSchema` for why `0001_core.sql`, which also creates `siwa.accounts`, is the queue's).
public enum SIWASchema {
    /// The kinds' migrations, in the order they apply.
    public static let migrations = MigrationGroup(name: "siwa", migrations: [
        SQLFile.m0002_views, SQLFile.m0003_roles, SQLFile.m0004_transfer, SQLFile.m0005_notifications,
        SQLFile.m0006_notification_fixes, SQLFile.m0007_transfer_lookup_order, SQLFile.m0008_transfer_completion_hold,
        SQLFile.m0009_roles_least_privilege, SQLFile.m0010_retry_budget, SQLFile.m0011_safety_stops,
        SQLFile.m0013_rate_budget, SQLFile.m0014_priority_claim, SQLFile.m0015_worker_registry,
        SQLFile.m0016_sign_in, SQLFile.m0017_credential_state, SQLFile.m0018_retention, SQLFile.m0019_dashboard_views,
        SQLFile.m0020_hardening, SQLFile.m0021_lease_index,
        SQLFile.m0022_progress_per_job, SQLFile.m0023_queue_foreign_keys, SQLFile.m0024_account_ids,
        SQLFile.m0025_summaries_at_prune, SQLFile.m0026_range_claims, SQLFile.m0027_item_fillfactor,
        SQLFile.m0028_kept_range_items,
    ].map { Migration(name: $0.name, sql: $0.migrationText) })

    /// Key of the advisory lock every `siwa-jobs migrate` takes ("SIWAJOB"), unchanged since the
    /// first release so old and new binaries serialise too.
    static let migrationLockKey: Int64 = 0x5157_414A_4F42
}

extension Migrator {
    /// Every migration this binary ships: the queue's group, then the job kinds', with the record
    /// in `siwa.schema_migrations`. What `siwa-jobs migrate`, `doctor` and the worker's preflight use.
    public init() {
        self.init(groups: [QueueSchema.migrations, SIWASchema.migrations], schema: QueueSchema.schema,
                  lockKey: SIWASchema.migrationLockKey)
    }
}
