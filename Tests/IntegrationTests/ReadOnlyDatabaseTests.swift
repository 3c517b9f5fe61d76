import Clocks
import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// A read-only database (a hot standby, a demoted primary: simulated with
/// `default_transaction_read_only`, which new sessions pick up) is named as such: `work` exits 75
/// with a clear line, `doctor` fails its check, and the receiver's `/readyz` answers 503 with the
/// reason. Through the real binary.
@Suite(.serialized) struct ReadOnlyDatabaseTests {
    /// Makes new sessions of `db` read-only (`ALTER DATABASE … SET`, or `ALTER ROLE … IN DATABASE`
    /// for `role`) and ends its current ones, as a failover would.
    static func makeReadOnly(_ db: TestDatabase, role: String? = nil) async throws {
        let admin = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=postgres"))
        defer { admin.close() }
        if let role {
            try await admin.simpleQuery(unsafeSQL: "ALTER ROLE \(role) IN DATABASE \(db.name) SET default_transaction_read_only = on")
        } else {
            try await admin.simpleQuery(unsafeSQL: "ALTER DATABASE \(db.name) SET default_transaction_read_only = on")
        }
        try await admin.simpleQuery(unsafeSQL: """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(db.name)' AND pid <> pg_backend_pid()
            """)
    }

    static let readOnlyLine = "database is read-only: a standby or a failover in progress"

    @Test func workOnAReadOnlyDatabaseExits75Naming() async throws {
        let db = try await TestDatabase.create()
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 10, createdBy: "test")
        try await Self.makeReadOnly(db)
        let run = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop"], environment: db.environment)
        #expect(run.status == 75, "\(run.stderr)")
        #expect(run.stderr.contains(Self.readOnlyLine), "\(run.stderr)")
        #expect(run.stderr.contains("default_transaction_read_only"), "the reason found: \(run.stderr)")
        #expect(!run.stderr.contains("SQLSTATE 25006]: cannot execute"), "no raw write failure: \(run.stderr)")
        await db.drop()
    }

    @Test func aRoleLevelReadOnlySettingIsFoundToo() async throws {
        let db = try await TestDatabase.create()
        let role = "siwa_ro_\(UInt32.random(in: 0...UInt32.max))"
        try await db.pool.execute(SQL(unsafeSQL: "CREATE ROLE \(role) LOGIN IN ROLE siwa_receiver"))
        try await Self.makeReadOnly(db, role: role)
        var env = db.environment
        env["PGUSER"] = role
        let run = try await BinaryProcess.run(["notifications", "serve", "--port", "0"], environment: env)
        #expect(run.status == 75, "\(run.stderr)")
        #expect(run.stderr.contains(Self.readOnlyLine), "\(run.stderr)")
        try await db.pool.execute(SQL(unsafeSQL: "DROP ROLE \(role)"))
        await db.drop()
    }

    /// A failover mid-run: the worker's writes meet a read-only session. Needs the worker change
    /// that stops a run on a non-data database error (issue #8) to say so by meaning.
    @Test
    func aDatabaseTurningReadOnlyMidRunStopsTheWorkerWith75() async throws {
        let db = try await TestDatabase.create()
        let worker = try await SchemaVersionTests.workerUnderWay(on: db)
        try await Self.makeReadOnly(db)
        let status = await worker.wait()
        #expect(status == 75, "\(worker.stderr.suffix(2000))")
        #expect(worker.stdout.contains(Self.readOnlyLine) || worker.stderr.contains(Self.readOnlyLine),
                "\(worker.stderr.suffix(2000))")
        let failed: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_items WHERE state = 'failed'")
        #expect(failed == 0, "a read-only database fails no item")
        await db.drop()
    }

    @Test func doctorReportsAReadOnlyDatabase() async throws {
        let db = try await TestDatabase.create()
        try await Self.makeReadOnly(db)
        let run = try await BinaryProcess.run(["doctor"], environment: db.environment)
        #expect(run.status != 0, "\(run.stdout)")
        #expect(run.stdout.contains("ok    database: "), "\(run.stdout)")
        #expect(run.stdout.contains("FAIL  database writes: read-only: transactions are read-only here"), "\(run.stdout)")
        await db.drop()
    }

    @Test func readyzAnswers503WithTheReasonOnceTheDatabaseTurnsReadOnly() async throws {
        let world = try await NotificationWorld.create(accounts: 0)
        #expect(try await world.answer("GET", path: "readyz") == #"200 {"status":"ready"}"#)
        try await Self.makeReadOnly(world.database)
        var answer = ""
        for _ in 0..<500 where !answer.contains("database_read_only") {
            answer = try await world.answer("GET", path: "readyz")
            if !answer.contains("database_read_only") { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(answer.hasPrefix("503 ") && answer.contains(#""error":"database_read_only""#), "readyz never said read-only: \(answer)")
        #expect(answer.contains("a standby or a failover in progress"), "\(answer)")
        #expect(try await world.answer("GET", path: "healthz") == #"200 {"status":"ok"}"#, "liveness does not ask the database")
        let payload = Forge.token(header: #"{"alg":"RS256","kid":"k"}"#, claims: Forge.claims(sub: "s1", clientID: SIWAWorld.clientID)) { _ in
            [1, 2, 3]
        }
        let stored = try await world.postPayload(payload)
        #expect(stored.hasPrefix("503 "), "a notification is not acknowledged while it cannot be stored: \(stored)")
        await world.tearDown()
    }
}
