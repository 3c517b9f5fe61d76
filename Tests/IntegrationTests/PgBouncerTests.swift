import Foundation
import Postgres
import Testing

/// `siwa-jobs` behind PgBouncer in transaction mode (`scripts/pgbouncer-up.sh`, started by
/// `scripts/test.sh`): the worker's LISTEN choices, and session state that must not leak from one
/// client to another through a shared server connection. The multi-worker drains and the kill -9
/// rerun through PgBouncer are in `RefreshValidationTests`.
@Suite(.serialized) struct PgBouncerTests {
    /// Starts `work` with `extra` environment and waits for a log line containing `marker`.
    static func workerLogs(_ marker: String, database: TestDatabase, extra: [String: String]) async throws -> String {
        var env = try database.environment(via: .pgbouncer)
        env["SIWA_LOG_FORMAT"] = "json"
        env.merge(extra) { _, new in new }
        let worker = try BinaryProcess(["work", "--heartbeat-seconds", "1", "--heartbeat-timeout-seconds", "4"], environment: env)
        // "worker registered" comes from inside the service group, so SIGTERM is handled by then.
        try await Eventually.wait("the worker's log lines '\(marker)' and 'worker registered'", while: worker) {
            worker.stderr.contains(marker) && worker.stderr.contains("worker registered")
        }
        worker.signal(SIGTERM)
        #expect(await worker.wait() == 0, "\(worker.stderr.suffix(800))")
        return worker.stderr
    }

    @Test func aWorkerBehindPgBouncerPollsAndSaysHowToListenDirectly() async throws {
        let database = try await TestDatabase.create()
        let log = try await Self.workerLogs("LISTEN unavailable", database: database, extra: [:])
        #expect(log.contains("connection pooler") && log.contains("SIWA_LISTEN_DATABASE_URL"), "\(log.suffix(800))")
        // Allowed through a pooler (session mode), the delivery check still finds that nothing arrives.
        let on = try await Self.workerLogs("LISTEN unavailable", database: database, extra: ["SIWA_LISTEN": "on"])
        #expect(on.contains("did not arrive"), "\(on.suffix(800))")
        let off = try await Self.workerLogs("LISTEN off", database: database, extra: ["SIWA_LISTEN": "off"])
        #expect(!off.contains("LISTEN unavailable"))
        await database.drop()
    }

    @Test func theListenerCanUseADirectConnectionWhileTheWorkerUsesPgBouncer() async throws {
        let database = try await TestDatabase.create()
        let direct = ProcessInfo.processInfo.environment
        let url = "host=\(direct["PGHOST"] ?? "") port=\(direct["PGPORT"] ?? "5432") dbname=\(database.name)"
        let log = try await Self.workerLogs("LISTEN established", database: database, extra: ["SIWA_LISTEN_DATABASE_URL": url])
        #expect(!log.contains("LISTEN unavailable"), "\(log.suffix(800))")
        // The registry row and the queue went through PgBouncer all the same.
        #expect(log.contains("worker registered"))
        await database.drop()
    }

    /// The receiver bounds each request with `statement_timeout`; set per session, it would stay on
    /// the server connection PgBouncer hands to the next client (a worker, `migrate`). Every server
    /// connection of the pool is looked at, each held by its own open transaction.
    @Test func theReceiversStatementTimeoutStaysInItsTransaction() async throws {
        let notifications = try await NotificationWorld.create(accounts: 0, databasePort: try PgBouncer.port())
        for _ in 0..<5 {
            #expect(try await notifications.answer("GET", path: "readyz") == "200 {\"status\":\"ready\"}")
        }
        var connections: [PostgresConnection] = []
        defer { connections.forEach { $0.close() } }
        var timeouts: [String] = []
        for _ in 0..<8 {
            let connection = try await PgBouncer.connect(database: notifications.database.name)
            connections.append(connection)
            try await connection.simpleQuery(unsafeSQL: "BEGIN")
            let rows = try await connection.query("SELECT current_setting('statement_timeout') AS t")
            timeouts.append(try rows.first?.decode("t") ?? "?")
        }
        #expect(timeouts.allSatisfy { $0 == "0" }, "statement_timeout seen through PgBouncer: \(timeouts)")
        await notifications.tearDown()
    }
}
