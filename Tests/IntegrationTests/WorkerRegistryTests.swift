import Foundation
import Postgres
import Testing

/// The live worker registry (issue #9 §4) through the real binary and PostgreSQL: `work` and
/// `notifications serve` heartbeat into `siwa.workers`, `siwa-jobs workers` lists the live ones, a
/// clean stop deletes its row, a killed process drops out after its heartbeat timeout.
@Suite(.serialized) struct WorkerRegistryTests {
    /// Fast heartbeats so a killed worker expires in seconds (the deadlines below are liveness bounds).
    static let heartbeat = ["--heartbeat-seconds", "1", "--heartbeat-timeout-seconds", "4"]
    /// For tests that list live workers more than once: a row stays live 10 s past its last
    /// heartbeat, so a worker starved for a few seconds on a loaded machine is still listed.
    static let patientHeartbeat = ["--heartbeat-seconds", "1", "--heartbeat-timeout-seconds", "10"]

    /// `siwa-jobs workers --json`, decoded.
    static func live(_ env: [String: String]) async throws -> [[String: Any]] {
        let run = try await BinaryProcess.run(["workers", "--json"], environment: env)
        guard run.status == 0 else { throw TestFailure("workers --json exited \(run.status): \(run.stderr)") }
        guard let list = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]] else {
            throw TestFailure("workers --json printed no JSON array: \(run.stdout)")
        }
        return list
    }

    static func pids(_ workers: [[String: Any]]) -> Set<Int32> {
        Set(workers.compactMap { ($0["pid"] as? Int).map(Int32.init) })
    }

    static func env(_ database: TestDatabase) -> [String: String] {
        var env = database.environment
        env["SIWA_LOG_FORMAT"] = "json"
        return env
    }

    @Test func workersListsFourLiveWorkersAndNoneAfterTheyStop() async throws {
        let database = try await TestDatabase.create()
        let env = Self.env(database)
        let workers = try (0..<4).map { _ in
            try BinaryProcess(["work", "--concurrency", "2"] + Self.patientHeartbeat, environment: env)
        }
        let expected = Set(workers.map { $0.process.processIdentifier })
        try await Eventually.wait("4 live workers listed", while: workers[0]) {
            Self.pids(try await Self.live(env)) == expected
        }
        let table = try await BinaryProcess.run(["workers"], environment: env)
        #expect(table.status == 0)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("WORKER  ") == true && lines.first?.contains("IN_FLIGHT") == true, "\(table.stdout)")
        #expect(lines.last == "4 live workers", "\(table.stdout)")
        for worker in workers {
            #expect(lines.contains { $0.contains(" \(worker.process.processIdentifier) ") && $0.contains(" work ") })
        }
        for row in try await Self.live(env) {
            #expect(row["command"] as? String == "work")
            #expect(row["concurrency"] as? Int == 2)
            #expect((row["kinds"] as? [String])?.contains("noop") == true)
            #expect(row["apple_rate"] is NSNull || row["apple_rate"] as? Double == 0, "an idle worker calls no Apple endpoint")
            #expect((row["version"] as? String)?.isEmpty == false)
        }
        workers.forEach { $0.signal(SIGTERM) }
        for worker in workers {
            #expect(await worker.wait() == 0, "\(worker.stderr.suffix(800))")
        }
        // A clean stop deletes its own row: nothing is left to expire.
        #expect(try await Self.live(env).isEmpty)
        let rows: Int = try await database.scalar("SELECT count(*)::int FROM siwa.workers")
        #expect(rows == 0)
        let empty = try await BinaryProcess.run(["workers"], environment: env)
        #expect(empty.stdout == "no live workers\n")
        await database.drop()
    }

    @Test func aKilledWorkerDisappearsWithinItsHeartbeatTimeout() async throws {
        let database = try await TestDatabase.create()
        let env = Self.env(database)
        let survivor = try BinaryProcess(["work"] + Self.heartbeat, environment: env)
        let victim = try BinaryProcess(["work"] + Self.heartbeat, environment: env)
        let both = Set([survivor.process.processIdentifier, victim.process.processIdentifier])
        try await Eventually.wait("2 live workers listed", while: victim) { Self.pids(try await Self.live(env)) == both }
        victim.signal(SIGKILL)
        _ = await victim.wait()
        let rowsAfterKill: Int = try await database.scalar("SELECT count(*)::int FROM siwa.workers")
        #expect(rowsAfterKill == 2, "kill -9 leaves the row behind, to expire")
        try await Eventually.wait("the killed worker no longer listed", while: survivor, timeout: .seconds(60)) {
            Self.pids(try await Self.live(env)) == [survivor.process.processIdentifier]
        }
        try await Eventually.wait("the killed worker's row swept by the survivor's heartbeat", while: survivor, timeout: .seconds(60)) {
            try await database.scalar("SELECT count(*)::int FROM siwa.workers", as: Int.self) == 1
        }
        // The sweep commits before it is logged: wait for the line rather than race it (it had
        // failed once on a loaded machine, the row gone and the line not yet written).
        try await Eventually.wait("the sweep logged by the survivor", while: survivor, timeout: .seconds(30)) {
            survivor.stderr.contains("expired workers removed")
        }
        survivor.signal(SIGTERM)
        #expect(await survivor.wait() == 0)
        #expect(try await Self.live(env).isEmpty)
        await database.drop()
    }

    @Test func itemsInFlightAndKindsAreReported() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(500))
        try await world.seed(accounts: 200, revokedFraction: 0)
        _ = try await world.enqueue()
        let worker = try BinaryProcess(["work", "--concurrency", "8"] + Self.heartbeat, environment: world.environment)
        try await Eventually.wait("a heartbeat reporting items in flight and an Apple rate", while: worker) {
            try await Self.live(world.environment).contains {
                ($0["in_flight"] as? Int ?? 0) >= 1 && ($0["apple_rate"] as? Double ?? 0) > 0
            }
        }
        let row = try #require(try await Self.live(world.environment).first)
        #expect((row["kinds"] as? [String])?.contains("refresh-validation") == true)
        #expect(row["concurrency"] as? Int == 8)
        worker.signal(SIGTERM)
        #expect(await worker.wait() == 0, "\(worker.stderr.suffix(800))")
        #expect(try await Self.live(world.environment).isEmpty)
        await world.tearDown()
    }

    @Test func theNotificationReceiverIsListedWhileItServes() async throws {
        let notifications = try await NotificationWorld.create(accounts: 0, serveArguments: Self.heartbeat)
        let env = notifications.world.environment
        let pid = notifications.receiver.process.processIdentifier
        try await Eventually.wait("the receiver listed", while: notifications.receiver) {
            try await Self.live(env).contains { $0["pid"] as? Int == Int(pid) && $0["command"] as? String == "notifications serve" }
        }
        notifications.receiver.signal(SIGTERM)
        #expect(await notifications.receiver.wait() == 0)
        #expect(try await Self.live(env).isEmpty)
        await notifications.tearDown()
    }

    @Test func doctorWarnsAboutLiveWorkersOfAnotherVersion() async throws {
        let world = try await SIWAWorld.create()
        let before = try await BinaryProcess.run(["doctor"], environment: world.environment)
        #expect(before.status == 0, "\(before.stdout)")
        #expect(before.stdout.contains("ok    worker versions: no live workers"), "\(before.stdout)")
        // An older worker that heartbeats, and one that died long ago (expired: not live, not warned about).
        try await world.database.pool.withConnection { conn in
            _ = try await conn.execute("""
                INSERT INTO siwa.workers (worker_id, host, pid, version, command, started_at, expires_at, concurrency)
                VALUES ('old-host:41:7', 'old-host', 41, '0.0.1-old', 'work', now(), now() + interval '1 hour', 64),
                       ('gone-host:42:8', 'gone-host', 42, '0.0.0-gone', 'work', now(), now() - interval '1 second', 64)
                """)
        }
        let after = try await BinaryProcess.run(["doctor"], environment: world.environment)
        #expect(after.status == 0, "a warning does not change the exit status: \(after.stdout)")
        let line = after.stdout.split(separator: "\n").first { $0.hasPrefix("warn  worker versions:") } ?? ""
        #expect(line.contains("1 of 1 live workers run another version") && line.contains("old-host:41:7 (0.0.1-old)"), "\(after.stdout)")
        #expect(!after.stdout.contains("gone-host"))
        await world.tearDown()
    }

    @Test func heartbeatSettingsAreChecked() async throws {
        let database = try await TestDatabase.create()
        var env = Self.env(database)
        let short = try await BinaryProcess.run(["work", "--drain", "--heartbeat-seconds", "5", "--heartbeat-timeout-seconds", "6"],
                                                environment: env)
        #expect(short.status == 78 && short.stderr.contains("at least twice the heartbeat interval"), "\(short.stderr)")
        env["SIWA_HEARTBEAT_SECONDS"] = "soon"
        let bad = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(bad.status == 78 && bad.stderr.contains("SIWA_HEARTBEAT_SECONDS"), "\(bad.stderr)")
        env["SIWA_HEARTBEAT_SECONDS"] = nil
        env["SIWA_LISTEN"] = "sometimes"
        let listen = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(listen.status == 78 && listen.stderr.contains("SIWA_LISTEN 'sometimes'"), "\(listen.stderr)")
        await database.drop()
    }
}
