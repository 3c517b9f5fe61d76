import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// Migration 0018 (partitioned job_items, results, result_history) on a populated database
/// migrated to 0015: every row stays, the old rows become the `legacy` partition, a job that was
/// running drains to completion beside a new one, and prune can drop the legacy partition later.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RetentionMigrationTests {
    @Test func aPopulatedDatabaseAt0015MigratesAndKeepsWorking() async throws {
        let db = try await TestDatabase.create(migrated: false)
        let upTo0015 = Migrator(groups: [QueueSchema.migrations,
                                         MigrationGroup(name: "siwa", migrations: SIWASchema.migrations.migrations.filter { $0.name < "0016" })],
                                schema: QueueSchema.schema, lockKey: SIWASchema.migrationLockKey)
        _ = try await db.pool.withConnection { conn in try await upTo0015.migrate(on: conn) }
        // Job 1 finished with 300 results; job 2 running with 200 items, 50 of them done.
        try await db.pool.withConnection { conn in
            try await conn.simpleQuery(unsafeSQL: """
                INSERT INTO siwa.jobs (kind, state, finished_at, item_count) VALUES ('noop', 'completed', now(), 300);
                INSERT INTO siwa.jobs (kind, state, item_count) VALUES ('noop', 'running', 200);
                INSERT INTO siwa.job_items (job_id, state, attempt, finished_at) SELECT 1, 'succeeded', 1, now() FROM generate_series(1, 300);
                INSERT INTO siwa.job_items (job_id, state, attempt, finished_at)
                    SELECT 2, CASE WHEN g <= 50 THEN 'succeeded' ELSE 'available' END, CASE WHEN g <= 50 THEN 1 ELSE 0 END,
                           CASE WHEN g <= 50 THEN now() END FROM generate_series(1, 200) g;
                INSERT INTO siwa.results (item_id, job_id, outcome, attempt)
                    SELECT id, job_id, 'ok', 1 FROM siwa.job_items WHERE state = 'succeeded';
                """)
        }
        let migrate = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(migrate.status == 0 && migrate.stdout.contains("applied 0018_retention.sql"), "\(migrate.stdout) \(migrate.stderr)")
        let kind: String = try await db.scalar("SELECT relkind::text FROM pg_class WHERE oid = 'siwa.job_items'::regclass")
        #expect(kind == "p", "job_items is partitioned")
        let legacy: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items_legacy")
        let results: Int = try await db.scalar("SELECT count(*)::int FROM siwa.results")
        #expect(legacy == 500 && results == 350)

        // The old running job and a new one drain together; new item ids continue after the old.
        let enqueue = try await BinaryProcess.run(["enqueue", "noop", "--items", "100"], environment: db.environment)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        let drain = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop"], environment: db.environment)
        #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr.suffix(800))")
        let done: String = try await db.scalar("""
            SELECT string_agg(j.id || ':' || j.state || ':' || (SELECT count(*) FROM siwa.results r WHERE r.job_id = j.id), ','
                              ORDER BY j.id) FROM siwa.jobs j
            """)
        #expect(done == "1:completed:300,2:completed:200,3:completed:100", "\(done)")
        let newIDs: Bool = try await db.scalar("SELECT min(id) > 500 FROM siwa.job_items WHERE job_id = 3")
        #expect(newIDs)
        let partitions: String = try await db.scalar("SELECT string_agg(suffix, ',' ORDER BY lo) FROM siwa.item_partitions")
        #expect(partitions == "legacy,j3")

        // Once the old jobs are past the period, the legacy partition goes whole.
        try await db.pool.execute("UPDATE siwa.jobs SET finished_at = now() - interval '31 days' WHERE id IN (1, 2)")
        let prune = try await BinaryProcess.run(["prune"], environment: db.environment)
        #expect(prune.status == 0 && prune.stdout.contains("dropped partition legacy: 2 jobs, 500 items"), "\(prune.stdout) \(prune.stderr)")
        let left: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items")
        #expect(left == 100)
        let summaries: String = try await db.scalar("SELECT string_agg(job_id || ':' || items, ',' ORDER BY job_id) FROM siwa.job_summaries")
        #expect(summaries == "1:300,2:200,3:100", "every job keeps its summary")
        await db.drop()
    }
}
