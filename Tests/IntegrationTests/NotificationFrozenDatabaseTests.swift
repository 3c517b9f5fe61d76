import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// The receiver with a PostgreSQL that stops answering (a proxy that freezes): POSTs get 503
/// after `--db-timeout-seconds` instead of hanging, `/readyz` says so while `/healthz` stays up,
/// and SIGTERM still ends the process. The timeout is 3 s here, so the first (cold) insert fits
/// well inside it on a loaded machine.
@Suite(.serialized, .timeLimit(.minutes(20))) struct NotificationFrozenDatabaseTests {
    @Test func aFrozenDatabaseGets503AndSIGTERMStillExits() async throws {
        let pgPort = try #require(ProcessInfo.processInfo.environment["PGPORT"].flatMap(UInt16.init), "PGPORT is set by scripts/pg-up.sh")
        let proxy = try FreezableProxy(targetPort: pgPort)
        defer { proxy.close() }
        let world = try await NotificationWorld.create(accounts: 1, serveArguments: ["--db-timeout-seconds", "3"],
                                                       databasePort: proxy.port)
        let signed = try world.sign((0..<3).map { _ in
            NotificationSpec(type: "email-disabled", sub: world.subs[0], clientID: SIWAWorld.clientID)
        })
        #expect(try await world.postPayload(signed[0]) == #"200 {"status":"stored"}"#)

        proxy.frozen = true
        #expect(try await world.postPayload(signed[1]) == #"503 {"error":"unavailable"}"#)
        #expect(try await world.answer("GET", path: "readyz") == #"503 {"error":"database_unavailable"}"#)
        #expect(try await world.answer("GET", path: "healthz") == #"200 {"status":"ok"}"#, "liveness does not ask the database")

        // SIGTERM with a POST in flight (its new database connection reached the proxy) and the
        // database still frozen.
        let accepted = proxy.accepted
        let inFlight = Task { try await world.postPayload(signed[2]) }
        try await Eventually.wait("the in-flight POST's database connection to reach the proxy", while: world.receiver,
                                  timeout: .seconds(30)) { proxy.accepted != accepted }
        world.receiver.signal(SIGTERM)
        var exited = false
        for _ in 0..<3000 {   // a liveness bound (60 s), not a timing check: it exits within a few seconds
            if !world.receiver.process.isRunning {
                exited = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        if !exited { world.receiver.signal(SIGKILL) }
        #expect(exited, "the receiver must exit on SIGTERM while the database is stuck: \(world.receiver.stderr.suffix(2000))")
        #expect(await world.receiver.wait() == 0)
        #expect(try await inFlight.value.hasPrefix("503"), "the request in flight is answered")
        proxy.close()   // still frozen: nothing held back reaches PostgreSQL

        let log = world.receiver.stderr
        #expect(log.contains("no answer from the database within 3.0 s"), "\(log.suffix(2000))")
        let rows: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications")
        #expect(rows == 1, "only the POST answered 200 was stored")
        await world.tearDown()
    }
}
