import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// Setting priorities: at enqueue (`--priority`, the kinds' defaults), on a running job (`job
/// priority N P`), and for jobs planned before migration 0014.
@Suite struct PriorityControlTests {
    @Test func aRunningJobsNewPriorityDecidesTheNextClaim() async throws {
        let db = try await TestDatabase.create()
        let enqueuer = Enqueuer(pool: db.pool, clock: SystemClock())
        let ops = try await enqueuer.enqueueNoop(items: 20, createdBy: "test")
        let late = try await enqueuer.enqueueNoop(items: 20, priority: 8, createdBy: "test")
        let control = JobControl(pool: db.pool)
        #expect(try await control.setPriority(jobID: late.jobID, to: 1) == .changed(from: 8))
        let claimed = try await PostgresJobStore(pool: db.pool).claim(owner: "w", kinds: ["noop"], limit: 20, lease: .seconds(30))
        #expect(claimed.allSatisfy { $0.jobID == late.jobID && $0.priority == 1 }, "\(claimed.map(\.jobID))")
        let audit: String = try await db.scalar("""
            SELECT detail::text FROM siwa.audit_log WHERE action = 'job.priority' AND job_id = \(late.jobID)
            """)
        #expect(audit.contains("\"from\": 8") && audit.contains("\"to\": 1"), "\(audit)")

        #expect(try await control.perform(.cancel, jobID: ops.jobID) == .done)
        #expect(try await control.setPriority(jobID: ops.jobID, to: 0) == .notApplicable(state: "cancelled"))
        #expect(try await control.setPriority(jobID: 999_999, to: 0) == .notFound)
        await #expect(throws: EnqueueError.self) { try await control.setPriority(jobID: late.jobID, to: 10) }
        await #expect(throws: EnqueueError.self) { try await enqueuer.enqueueNoop(items: 1, priority: -1, createdBy: "test") }
        let jobs: Int = try await db.scalar("SELECT count(*)::int FROM siwa.jobs")
        #expect(jobs == 2, "a refused priority writes nothing")
        let priority: Int = try await db.scalar("SELECT priority::int FROM siwa.jobs WHERE id = \(late.jobID)")
        #expect(priority == 1)
        await db.drop()
    }

    @Test func theKindsDefaultsGoFromSignInToTheNightlyValidation() {
        let order = ["sign-in", NotificationProcessingHandler.kind, RevocationSweepHandler.kind, TransferExportHandler.kind,
                     TransferImportHandler.kind, NoopHandler.kind, RefreshValidationHandler.kind]
        let defaults = order.map { JobPriority.default(forKind: $0) }
        #expect(defaults == [0, 2, 4, 4, 4, 4, 7])
        #expect(defaults.allSatisfy { JobPriority.range.contains($0) })
    }

    @Test func jobsPlannedBeforeMigration0014GetTheirKindsDefault() async throws {
        let db = try await TestDatabase.create(migrated: false)
        let shipped = Migrator()
        let before = MigrationGroup(name: shipped.groups[1].name,
                                    migrations: shipped.groups[1].migrations.filter { $0.name < "0014" })
        let older = Migrator(groups: [shipped.groups[0], before], schema: shipped.schema, lockKey: shipped.lockKey)
        _ = try await db.pool.withConnection { conn in try await older.migrate(on: conn) }
        try await db.pool.execute("""
            INSERT INTO siwa.jobs (kind, state) VALUES ('refresh-validation', 'running'), ('notification-processing', 'running'),
                ('revocation-sweep', 'paused'), ('sign-in', 'running'), ('transfer-export', 'completed')
            """)
        let report = try await db.pool.withConnection { conn in try await shipped.migrate(on: conn) }
        #expect(report.applied.contains("0014_priority_claim.sql"))
        let rows = try await db.pool.query("SELECT kind, priority::int AS priority FROM siwa.jobs ORDER BY id")
        let priorities = try rows.map { "\(try $0.decode("kind", as: String.self))=\(try $0.decode("priority", as: Int.self))" }
        #expect(priorities == ["refresh-validation=7", "notification-processing=2", "revocation-sweep=4", "sign-in=0", "transfer-export=4"])
        let indexes = try await db.pool.query("""
            SELECT indexname FROM pg_indexes WHERE schemaname = 'siwa' AND tablename = 'job_items' ORDER BY indexname
            """).map { try $0.decode("indexname", as: String.self) }
        // 0014 replaced the claim index by one per job; 0026 replaced that by the singly items' own.
        #expect(indexes.contains("job_items_claim_singly") && !indexes.contains("job_items_claim")
                    && !indexes.contains("job_items_claim_by_job"), "\(indexes)")
        await #expect(throws: DatabaseError.self) {
            try await db.pool.execute("INSERT INTO siwa.jobs (kind, priority) VALUES ('noop', 10)")
        }
        await db.drop()
    }

    @Test func theCommandsTakePriorityAndSayIt() async throws {
        let db = try await TestDatabase.create()
        let env = db.environment
        let plain = try await BinaryProcess.run(["enqueue", "noop", "--items", "3"], environment: env)
        #expect(plain.status == 0 && plain.stdout.contains("enqueued job 1 (noop) with 3 items at priority 4"), "\(plain)")
        let urgent = try await BinaryProcess.run(["enqueue", "noop", "--items", "3", "--priority", "1"], environment: env)
        #expect(urgent.status == 0 && urgent.stdout.contains("with 3 items at priority 1"), "\(urgent)")
        let outside = try await BinaryProcess.run(["enqueue", "noop", "--items", "3", "--priority", "10"], environment: env)
        #expect(outside.status == 64 && outside.stderr.contains("--priority"), "\(outside)")
        let change = try await BinaryProcess.run(["job", "priority", "1", "0"], environment: env)
        #expect(change.status == 0 && change.stdout.contains("job 1: priority 4 -> 0"), "\(change)")
        let missing = try await BinaryProcess.run(["job", "priority", "77", "0"], environment: env)
        #expect(missing.status != 0 && missing.stderr.contains("job 77 not found"), "\(missing)")
        for path in [["enqueue", "refresh-validation"], ["enqueue", "revocation-sweep"], ["enqueue", "notifications"],
                     ["transfer", "export"], ["transfer", "import"]] {
            let help = try await BinaryProcess.run(path + ["--help"], environment: env)
            #expect(help.status == 0 && help.stdout.contains("--priority P"), "\(path)")
        }
        let nightly = try await BinaryProcess.run(["enqueue", "refresh-validation", "--help"], environment: env)
        #expect(nightly.stdout.contains("default: 7") || nightly.stdout.contains("default 7"), "\(nightly.stdout)")
        let stored: Int = try await db.scalar("SELECT priority::int FROM siwa.jobs WHERE id = 2")
        #expect(stored == 1)
        await db.drop()
    }
}
