import Foundation
import Postgres
import Testing

/// The listener behind PgBouncer in transaction mode (`scripts/pgbouncer-up.sh`, started by
/// `scripts/test.sh` on `SIWA_TEST_PGBOUNCER_PORT`): LISTEN is accepted there but nothing is ever
/// delivered, so the listener must give up and say why instead of waiting forever. On a direct
/// connection both checks pass (`ListenerTests`).
@Suite struct ListenerPoolerTests {
    static func throughPgBouncer() throws -> PostgresConfiguration {
        guard let text = ProcessInfo.processInfo.environment["SIWA_TEST_PGBOUNCER_PORT"], let port = UInt16(text) else {
            throw SetupFailure(description: "SIWA_TEST_PGBOUNCER_PORT is not set: run scripts/test.sh, or start "
                + "scripts/pgbouncer-up.sh DIR PORT $PGPORT and export SIWA_TEST_PGBOUNCER_PORT=PORT")
        }
        let database = ProcessInfo.processInfo.environment["PGDATABASE"] ?? "siwa"
        return PostgresConfiguration(conninfo: "host=127.0.0.1 port=\(port) dbname=\(database)", connectTimeoutSeconds: 5)
    }

    /// Drains the stream (a watchdog stops it after 60 s) and returns what it delivered.
    static func drain(_ listener: PostgresListener) async -> [PostgresNotification] {
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            listener.stop()
        }
        defer { watchdog.cancel() }
        var delivered: [PostgresNotification] = []
        for await notification in listener.notifications() { delivered.append(notification) }
        return delivered
    }

    @Test func givesUpOnAPooler() async throws {
        let listener = PostgresListener(configuration: try Self.throughPgBouncer(), channels: ["jobs"])
        let delivered = await Self.drain(listener)
        #expect(delivered.isEmpty, "not even the 'listening' notification: LISTEN was never trusted")
        let reason = try #require(listener.unavailableReason)
        #expect(reason.contains("connection pooler"), "\(reason)")
    }

    @Test func theDeliveryCheckCatchesTransactionPoolingWhenPoolersAreAllowed() async throws {
        let listener = PostgresListener(configuration: try Self.throughPgBouncer(), channels: ["jobs"],
                                        options: .init(refusesPoolers: false, deliveryCheckTimeout: .seconds(2)))
        let delivered = await Self.drain(listener)
        #expect(delivered.isEmpty)
        let reason = try #require(listener.unavailableReason)
        #expect(reason.contains("did not arrive within 2.0 s"), "\(reason)")
    }

    @Test func aDirectConnectionPassesBothChecks() async throws {
        let listener = PostgresListener(configuration: TestDatabase.configuration(), channels: ["jobs"])
        var first: PostgresNotification?
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            listener.stop()
        }
        for await notification in listener.notifications() {
            first = notification
            break
        }
        watchdog.cancel()
        listener.stop()
        #expect(first?.channel == "", "the 'listening' notification, after the delivery check")
        #expect(listener.unavailableReason == nil)
    }
}
