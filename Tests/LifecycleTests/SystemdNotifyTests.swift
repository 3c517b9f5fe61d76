import Clocks
import Foundation
import Lifecycle
import Testing
import TestSupport

/// `SystemdNotifier` and `SystemdNotifyService` against a fake `$NOTIFY_SOCKET`.
@Suite struct SystemdNotifyTests {
    @Test func environmentIsReadAsSystemdSetsIt() {
        #expect(SystemdNotifier.from(environment: [:]) == nil)
        let plain = SystemdNotifier.from(environment: ["NOTIFY_SOCKET": "/run/systemd/notify"])
        #expect(plain?.socketPath == "/run/systemd/notify")
        #expect(plain?.watchdogInterval == nil)
        let watched = SystemdNotifier.from(environment: ["NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "30000000"], pid: 7)
        #expect(watched?.watchdogInterval == .seconds(15))
        // WATCHDOG_PID names another process: the watchdog is not ours to ping.
        let other = SystemdNotifier.from(environment: ["NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"], pid: 7)
        #expect(other?.watchdogInterval == nil)
    }

    @Test(arguments: [true, false]) func datagramsReachAbstractAndPathSockets(abstract: Bool) async throws {
        let path = abstract ? nil : FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString)").path
        defer { if let path { unlink(path) } }
        let listener = try NotifySocketListener(path: path)
        let notifier = SystemdNotifier(socketPath: listener.address, watchdogInterval: nil)
        #expect(notifier.send("READY=1\nSTATUS=up") == nil)
        #expect(await listener.next(within: .seconds(10)) == "READY=1\nSTATUS=up")
    }

    @Test func unreachableSocketIsReportedNotThrown() {
        let notifier = SystemdNotifier(socketPath: "@siwa-nobody-\(UUID().uuidString)", watchdogInterval: nil)
        #expect(notifier.send("READY=1") != nil)
    }

    @Test func serviceSendsReadyWatchdogThenStopping() async throws {
        let listener = try NotifySocketListener()
        let clock = ManualClock()
        let service = SystemdNotifyService(notifier: SystemdNotifier(socketPath: listener.address, watchdogInterval: .seconds(5)),
                                           clock: clock, status: { "working" })
        let running = Task { await service.run() }
        #expect(await listener.next(within: .seconds(10)) == "READY=1\nSTATUS=working")
        #expect(await listener.next(within: .seconds(10)) == "WATCHDOG=1")
        for _ in 0..<2 {
            try await Self.waitForSleeper(clock)
            clock.advance(by: .seconds(5))
            #expect(await listener.next(within: .seconds(10)) == "WATCHDOG=1\nSTATUS=working")
        }
        service.shutdownGracefully()
        #expect(await listener.next(within: .seconds(10)) == "STOPPING=1\nSTATUS=stopping")
        await running.value
    }

    /// Waits (at most 10 s) until the service sleeps on the clock.
    static func waitForSleeper(_ clock: ManualClock) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while clock.sleeperCount == 0 {
            guard ContinuousClock.now < deadline else { throw NotifySocketError(message: "the notify service never slept on the clock") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
