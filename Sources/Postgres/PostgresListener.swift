import CLibPQ
import Foundation
import Synchronization

/// One `NOTIFY` delivery (https://www.postgresql.org/docs/15/sql-notify.html).
/// `channel == ""` is synthetic: the listener has just (re-)established LISTEN, so notifications
/// may have been missed and callers should re-poll.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// PID of the notifying backend (0 for the synthetic notification).
    public let pid: Int32

    public init(channel: String, payload: String, pid: Int32) {
        self.channel = channel
        self.payload = payload
        self.pid = pid
    }
}

/// A dedicated LISTEN connection driven by its own thread.
///
/// The thread waits on the socket with `poll()` (250 ms slices, so `stop()` takes effect
/// quickly), then `PQconsumeInput` / `PQnotifies`. After a drop it reconnects by itself with
/// jittered exponential backoff (0.1 s doubling, capped at 5 s) and re-issues LISTEN. Every time
/// LISTEN is established (the first time too) it yields a synthetic notification with channel "".
/// The stream buffers at most the newest 4096 notifications if the consumer falls behind.
///
/// Time: this type reads no wall clock and takes no `WallClock`. Its waits are on its own OS
/// thread (libpq's calls block), on real sockets (`poll()`), and against a real server: the
/// reconnect backoff is a monotonic-time wait on a semaphore that `stop()` signals, so a stop
/// ends it at once. An injected clock could not drive them (its `sleep` is async, and the socket
/// wait is not the clock's), and no decision here depends on the time of day.
public final class PostgresListener: Sendable {
    private let configuration: PostgresConfiguration
    private let channels: [String]
    private let control = ListenerControl()
    private let stream: Mutex<AsyncStream<PostgresNotification>?> = Mutex(nil)

    /// - Parameters:
    ///   - configuration: how to connect (its `applicationName` shows in `pg_stat_activity`).
    ///   - channels: channel names, LISTENed as quoted identifiers (exact, case-sensitive).
    public init(configuration: PostgresConfiguration, channels: [String]) {
        self.configuration = configuration
        self.channels = channels
    }

    deinit {
        control.requestStop()
    }

    /// The notification stream; the first call starts the listening thread, later calls return
    /// the same stream (one consumer). The stream finishes after `stop()`.
    public func notifications() -> AsyncStream<PostgresNotification> {
        stream.withLock { existing in
            if let existing { return existing }
            let (stream, continuation) = AsyncStream.makeStream(
                of: PostgresNotification.self, bufferingPolicy: .bufferingNewest(4096))
            let control = self.control
            continuation.onTermination = { _ in control.requestStop() }
            let loop = ListenerLoop(configuration: configuration, channels: channels, control: control,
                                    continuation: continuation)
            let thread = Thread { loop.run() }
            thread.name = "siwa.postgres.listener"
            thread.start()
            existing = stream
            return stream
        }
    }

    /// Stops listening: closes the connection and finishes the stream within about 250 ms.
    public func stop() {
        control.requestStop()
    }
}

/// The stop flag shared by a listener and its thread, and the wake-up that cuts a backoff short.
final class ListenerControl: Sendable {
    private let stopRequested = Atomic<Bool>(false)
    /// Signalled by `requestStop()`; the backoff waits on it with a timeout.
    private let stopped = DispatchSemaphore(value: 0)

    var shouldStop: Bool { stopRequested.load(ordering: .acquiring) }

    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        stopped.signal()
    }

    /// Blocks the calling thread for `seconds` (monotonic time), or until a stop is requested.
    func pause(seconds: Double) {
        guard !shouldStop else { return }
        _ = stopped.wait(timeout: .now() + .nanoseconds(Int(seconds * 1_000_000_000)))
    }
}

/// The blocking loop that runs on the listener's thread.
private struct ListenerLoop: Sendable {
    let configuration: PostgresConfiguration
    let channels: [String]
    let control: ListenerControl
    let continuation: AsyncStream<PostgresNotification>.Continuation

    func run() {
        var failures = 0
        while !control.shouldStop {
            guard case .success(let handle) = PostgresConnection.openHandle(configuration) else {
                failures += 1
                sleepBackoff(failures)
                continue
            }
            if listenAll(handle) {
                failures = 0
                continuation.yield(PostgresNotification(channel: "", payload: "", pid: 0))
                pump(handle)
                failures = 1  // dropped: short jittered pause before reconnecting
            } else {
                failures += 1
            }
            PQfinish(handle)
            if failures > 0 { sleepBackoff(failures) }
        }
        continuation.finish()
    }

    private func listenAll(_ handle: OpaquePointer) -> Bool {
        guard !channels.isEmpty else { return true }
        let text = channels.map { "LISTEN \(SQL.quoteIdentifier($0))" }.joined(separator: "; ")
        guard case .success(let result) = PostgresConnection.simpleExecute(text, on: handle, secrets: []) else {
            return false
        }
        PQclear(result)
        return true
    }

    /// Delivers notifications until the connection fails or stop is requested.
    private func pump(_ handle: OpaquePointer) {
        while !control.shouldStop {
            while let notification = PQnotifies(handle) {
                let item = notification.pointee
                continuation.yield(PostgresNotification(
                    channel: item.relname.map { String(cString: $0) } ?? "",
                    payload: item.extra.map { String(cString: $0) } ?? "",
                    pid: item.be_pid))
                PQfreemem(notification)
            }
            let socket = PQsocket(handle)
            guard socket >= 0, PQstatus(handle) == CONNECTION_OK else { return }
            let ready = clibpq_wait_socket(socket, 0, 250)
            if ready < 0 && errno != EINTR { return }
            if ready > 0 && PQconsumeInput(handle) == 0 { return }
        }
    }

    /// Sleeps for a jittered exponential backoff (0.1 s doubling, capped at 5 s), waking at once
    /// if stop is requested.
    private func sleepBackoff(_ failures: Int) {
        let ceiling = min(5.0, 0.1 * pow(2.0, Double(min(failures - 1, 10))))
        control.pause(seconds: ceiling / 2 + Double.random(in: 0...(ceiling / 2)))
    }
}
