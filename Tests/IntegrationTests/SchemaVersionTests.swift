import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// The schema is this binary's or nothing runs: a schema newer than the binary is refused (78) by
/// the preflight, `migrate` and `doctor`; a schema dropped mid-run stops the worker with 78 and
/// "run 'siwa-jobs migrate'". Through the real binary.
@Suite(.serialized) struct SchemaVersionTests {
    /// A migration a newer release applied, unknown to this binary.
    static let future = "0099_from_a_newer_release.sql"

    static func newerDatabase() async throws -> TestDatabase {
        let db = try await TestDatabase.create()
        try await db.pool.execute("INSERT INTO siwa.schema_migrations (name, checksum) VALUES (\(future), 'abc')")
        return db
    }

    @Test func theWorkerAndTheReceiverRefuseANewerSchema() async throws {
        let db = try await Self.newerDatabase()
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 3, createdBy: "test")
        for command in [["work", "--drain"], ["notifications", "serve", "--port", "0"]] {
            let run = try await BinaryProcess.run(command, environment: db.environment)
            #expect(run.status == 78, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("newer than this binary") && run.stderr.contains(Self.future), "\(run.stderr)")
        }
        let done: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items WHERE state <> 'available'")
        #expect(done == 0, "nothing ran against the newer schema")
        await db.drop()
    }

    @Test func migrateRefusesANewerSchemaAndChangesNothing() async throws {
        let db = try await Self.newerDatabase()
        // A migration of this binary is missing too: a refusing migrate must not apply it.
        try await db.pool.execute("DELETE FROM siwa.schema_migrations WHERE name = '0008_transfer_completion_hold.sql'")
        let before: Int = try await db.scalar("SELECT count(*)::int FROM siwa.schema_migrations")
        let run = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(run.status == 78, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains(Self.future) && run.stderr.contains("newer release"), "\(run.stderr)")
        #expect(!run.stdout.contains("applied 0008"), "\(run.stdout)")
        let after: Int = try await db.scalar("SELECT count(*)::int FROM siwa.schema_migrations")
        #expect(after == before)
        await db.drop()
    }

    @Test func doctorReportsANewerSchemaAsAProblem() async throws {
        let db = try await Self.newerDatabase()
        let run = try await BinaryProcess.run(["doctor"], environment: db.environment)
        #expect(run.status == 78, "\(run.stdout)")
        #expect(run.stdout.contains("FAIL  migrations: the database schema is newer than this binary"), "\(run.stdout)")
        await db.drop()
    }

    /// A `work --drain` process on a long no-op job of `db`, once it has written its first result
    /// (waited for up to about 30 s).
    static func workerUnderWay(on db: TestDatabase) async throws -> BinaryProcess {
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 200_000, createdBy: "test")
        let worker = try BinaryProcess(["work", "--drain", "--kinds", "noop", "--concurrency", "4", "--claim-batch", "50"],
                                       environment: db.environment)
        var started = false
        for _ in 0..<1500 where !started && worker.process.isRunning {
            started = try await db.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) > 0
            if !started { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(started, "the worker never wrote a result: \(worker.stderr.suffix(1000))")
        return worker
    }

    @Test func aSchemaDroppedMidRunStopsTheWorkerWith78() async throws {
        let db = try await TestDatabase.create()
        let worker = try await Self.workerUnderWay(on: db)
        // DROP SCHEMA locks every table in turn while the worker's statements hold some of them:
        // PostgreSQL may pick the DROP as a deadlock's victim (40P01), and an operator would run it again.
        for attempt in 1...5 {
            do {
                try await db.pool.execute("DROP SCHEMA siwa CASCADE")
                break
            } catch let error as DatabaseError where error.sqlState == "40P01" && attempt < 5 {
                continue
            }
        }
        let status = await worker.wait()
        #expect(status == 78, "\(worker.stderr.suffix(2000))")
        #expect(worker.stdout.contains("run 'siwa-jobs migrate'"), "the closing lines say what to do: \(worker.stdout)")
        await db.drop()
    }
}
