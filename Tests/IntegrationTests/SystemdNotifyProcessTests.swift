import Foundation
import Testing
import TestSupport

/// Issue #11 part 6 through the real binary: with a fake `$NOTIFY_SOCKET` (an abstract AF_UNIX
/// datagram socket) and `WATCHDOG_USEC`, the long-running worker, the receiver and the dashboard
/// send `READY=1` (with a status) first, then `WATCHDOG=1` pings, and `STOPPING=1` on SIGTERM.
@Suite(.serialized) struct SystemdNotifyProcessTests {
    static let commands: [[String]] = [
        ["work", "--kinds", "noop"],
        ["notifications", "serve", "--port", "0"],
        ["dashboard", "--port", "0"],
    ]

    @Test(arguments: commands) func readyThenWatchdogThenStopping(command: [String]) async throws {
        let world = try await SIWAWorld.create()
        let socket = try NotifySocketListener()
        var env = world.environment
        env["NOTIFY_SOCKET"] = socket.address
        env["WATCHDOG_USEC"] = "400000"   // a ping every 200 ms
        let process = try BinaryProcess(command, environment: env)
        defer { if process.process.isRunning { process.signal(SIGKILL) } }

        let first = await socket.next(within: .seconds(60))
        #expect(first?.hasPrefix("READY=1\nSTATUS=") == true, "first datagram: \(first ?? "none"); stderr: \(process.stderr.suffix(800))")
        var pings = 0
        for _ in 0..<20 where pings < 3 {
            guard let message = await socket.next(within: .seconds(10)) else { break }
            #expect(!message.contains("STOPPING=1"), "stopped before SIGTERM: \(message)")
            if message.hasPrefix("WATCHDOG=1") { pings += 1 }
        }
        #expect(pings == 3, "\(command.joined(separator: " ")): \(pings) WATCHDOG=1 pings before SIGTERM")

        process.signal(SIGTERM)
        let untilStopping = await socket.collect(until: "STOPPING=1", within: .seconds(30))
        #expect(untilStopping != nil, "no STOPPING=1 after SIGTERM")
        #expect(await process.wait(timeout: .seconds(60)) == 0, "\(process.stderr.suffix(800))")
        await world.tearDown()
    }
}
