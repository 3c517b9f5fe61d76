import Foundation
import Postgres
import Testing

@Suite(.timeLimit(.minutes(5))) struct ListenerTests {
    /// LISTEN established -> NOTIFY delivered -> backend terminated -> listener reconnects
    /// (synthetic "" notification) -> NOTIFY delivered again.
    @Test func deliversNotificationsAndSurvivesBackendTermination() async throws {
        let channel = TestDatabase.uniqueName("Chan")
        let appName = TestDatabase.uniqueName("siwa-listener-test")
        let listener = PostgresListener(configuration: TestDatabase.configuration(applicationName: appName),
                                        channels: [channel, "other_channel"])
        let notifier = try await TestDatabase.connect()
        defer { notifier.close() }
        // Watchdog: if anything hangs, stopping finishes the stream and the test fails below.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(20))
            listener.stop()
        }
        defer { watchdog.cancel() }

        var step = 0
        var received: [String] = []
        for await notification in listener.notifications() {
            switch (step, notification.channel) {
            case (0, ""):
                try await notifier.query("SELECT pg_notify(\(channel), \("first"))")
                step = 1
            case (1, channel):
                received.append(notification.payload)
                #expect(notification.pid == notifier.backendPID)
                #expect(try await TestDatabase.terminate(applicationName: appName) == 1)
                step = 2
            case (2, ""):
                try await notifier.query("SELECT pg_notify(\(channel), \("second, with 'quotes' & ünï"))")
                step = 3
            case (3, channel):
                received.append(notification.payload)
                step = 4
            default:
                Issue.record("unexpected notification at step \(step): channel \(notification.channel)")
            }
            if step == 4 { break }
        }
        listener.stop()
        #expect(step == 4)
        #expect(received == ["first", "second, with 'quotes' & ünï"])
    }

    @Test func stopFinishesTheStream() async throws {
        let listener = PostgresListener(configuration: TestDatabase.configuration(), channels: ["unused"])
        let watchdog = Task {
            try await Task.sleep(for: .seconds(20))
            listener.stop()
        }
        defer { watchdog.cancel() }
        var count = 0
        for await notification in listener.notifications() {
            count += 1
            #expect(notification.channel == "")
            listener.stop()
        }
        #expect(count == 1)
    }

    /// A server that drops every connection: the listener keeps retrying (the server counts the
    /// attempts), delivers nothing (not even the "listening" notification, since LISTEN never
    /// succeeded), raises nothing, and its stream ends when stopped.
    @Test func unreachableServerRetriesQuietlyUntilStopped() async throws {
        let server = try AcceptCounter()
        defer { server.stop() }
        let configuration = PostgresConfiguration(conninfo: "host=127.0.0.1 port=\(server.port) sslmode=disable", connectTimeoutSeconds: 2)
        let listener = PostgresListener(configuration: configuration, channels: ["jobs"])
        let consumer = Task {
            var delivered = 0
            for await _ in listener.notifications() { delivered += 1 }
            return delivered
        }
        // Three attempts take about 0.1 + 0.2 + 0.4 s of backoff; the deadline is a liveness bound.
        let deadline = ContinuousClock.now + .seconds(60)
        while server.count < 3 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(server.count >= 3, "the listener retried \(server.count) times")
        listener.stop()
        let delivered = await consumer.value
        #expect(delivered == 0)
    }
}
