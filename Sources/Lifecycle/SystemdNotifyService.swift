import Clocks

/// Speaks systemd's notify protocol for a long-running process on its `ServiceGroup`: `READY=1`
/// with a `STATUS=` line when it starts (create it once the process is ready: connected, schema
/// checked, listening), `WATCHDOG=1` every `watchdogInterval` (half of `WATCHDOG_USEC`) while it
/// runs, and `STOPPING=1` as soon as a graceful stop is asked for (SIGTERM). A unit using it has
/// `Type=notify` and, for the watchdog, `WatchdogSec=`.
public final class SystemdNotifyService: Service {
    private let notifier: SystemdNotifier
    private let clock: any WallClock
    private let status: @Sendable () -> String
    private let onError: @Sendable (String) -> Void
    private let stopped = Latch()

    /// - Parameters:
    ///   - status: the `STATUS=` text, read at start and with each watchdog ping (one line,
    ///     e.g. `serving on 127.0.0.1:8443`).
    ///   - onError: told once when a datagram could not be sent (e.g. to log it).
    public init(notifier: SystemdNotifier, clock: any WallClock, status: @escaping @Sendable () -> String,
                onError: @escaping @Sendable (String) -> Void = { _ in }) {
        self.notifier = notifier
        self.clock = clock
        self.status = status
        self.onError = onError
    }

    public func run() async {
        var reported = false
        func send(_ state: String) {
            if let failure = notifier.send(state), !reported {
                reported = true
                onError(failure)
            }
        }
        send("READY=1\nSTATUS=\(Self.oneLine(status()))")
        guard let interval = notifier.watchdogInterval else {
            await stopped.wait()
            return
        }
        send("WATCHDOG=1")
        while !stopped.isOpen, !Task.isCancelled {
            await clock.sleep(for: interval, unless: stopped.wait)
            if stopped.isOpen || Task.isCancelled { break }
            send("WATCHDOG=1\nSTATUS=\(Self.oneLine(status()))")
        }
    }

    /// Sends `STOPPING=1` and ends the watchdog pings. Later calls do nothing.
    public func shutdownGracefully() {
        guard !stopped.isOpen else { return }
        stopped.open()
        notifier.send("STOPPING=1\nSTATUS=stopping")
    }

    static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
