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
/// Before it trusts LISTEN, the listener checks that notifications can reach it (`Options`): a
/// connection pooler in transaction mode (PgBouncer's `pool_mode = transaction`) accepts LISTEN
/// but hands the server connection to another client after it, so nothing would ever arrive.
/// When a check fails the listener gives up for good: `unavailableReason` says why and the
/// stream finishes, so the caller falls back to polling.
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
    /// What the listener checks before it trusts LISTEN on a connection.
    public struct Options: Sendable, Equatable {
        /// Give up when the connection goes through a pooler: the backend process id libpq was
        /// given at connect differs from the server's `pg_backend_pid()` (PgBouncer answers with
        /// its own). Default true; false for a pooler in session mode, where LISTEN works.
        public var refusesPoolers: Bool
        /// After LISTEN, NOTIFY a private channel from a second, short-lived connection and give
        /// up unless it arrives within this long; nil skips the check. Default 5 s.
        public var deliveryCheckTimeout: Duration?

        public init(refusesPoolers: Bool = true, deliveryCheckTimeout: Duration? = .seconds(5)) {
            self.refusesPoolers = refusesPoolers
            self.deliveryCheckTimeout = deliveryCheckTimeout
        }
    }

    private let configuration: PostgresConfiguration
    private let channels: [String]
    private let options: Options
    private let control = ListenerControl()
    private let stream: Mutex<AsyncStream<PostgresNotification>?> = Mutex(nil)

    /// - Parameters:
    ///   - configuration: how to connect (its `applicationName` shows in `pg_stat_activity`).
    ///   - channels: channel names, LISTENed as quoted identifiers (exact, case-sensitive).
    ///   - options: the checks made before LISTEN is trusted (default: both).
    public init(configuration: PostgresConfiguration, channels: [String], options: Options = Options()) {
        self.configuration = configuration
        self.channels = channels
        self.options = options
    }

    /// Why notifications cannot reach this listener (a pooler in transaction mode, a NOTIFY that
    /// never arrived), once it has given up; its stream has then finished. nil while it listens
    /// or retries a connection.
    public var unavailableReason: String? { control.unavailableReason }

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
            let loop = ListenerLoop(configuration: configuration, channels: channels, options: options, control: control,
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
    private let unavailable = Mutex<String?>(nil)

    var shouldStop: Bool { stopRequested.load(ordering: .acquiring) }

    var unavailableReason: String? { unavailable.withLock { $0 } }

    /// Records why LISTEN cannot work here and stops the loop.
    func giveUp(_ reason: String) {
        unavailable.withLock { $0 = reason }
        requestStop()
    }

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
struct ListenerLoop: Sendable {
    let configuration: PostgresConfiguration
    let channels: [String]
    let options: PostgresListener.Options
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
            switch establish(handle) {
            case .listening:
                failures = 0
                continuation.yield(PostgresNotification(channel: "", payload: "", pid: 0))
                pump(handle)
                failures = 1  // dropped: short jittered pause before reconnecting
            case .failed:
                failures += 1
            case .unavailable(let reason):
                control.giveUp(reason)
            }
            PQfinish(handle)
            if failures > 0 { sleepBackoff(failures) }
        }
        continuation.finish()
    }

    /// Delivers notifications until the connection fails or stop is requested.
    private func pump(_ handle: OpaquePointer) {
        while !control.shouldStop {
            _ = deliverPending(handle, probe: nil)
            guard waitForInput(handle, milliseconds: 250) else { return }
        }
    }

    /// Yields the notifications libpq has read, except those on `probe`.
    /// - Returns: true when one on `probe` was among them.
    func deliverPending(_ handle: OpaquePointer, probe: String?) -> Bool {
        var probed = false
        while let notification = PQnotifies(handle) {
            let item = notification.pointee
            let channel = item.relname.map { String(cString: $0) } ?? ""
            if channel == probe {
                probed = true
            } else {
                continuation.yield(PostgresNotification(channel: channel, payload: item.extra.map { String(cString: $0) } ?? "",
                                                        pid: item.be_pid))
            }
            PQfreemem(notification)
        }
        return probed
    }

    /// Waits up to `milliseconds` for the socket and reads what arrived.
    /// - Returns: false when the connection failed.
    func waitForInput(_ handle: OpaquePointer, milliseconds: Int32) -> Bool {
        let socket = PQsocket(handle)
        guard socket >= 0, PQstatus(handle) == CONNECTION_OK else { return false }
        let ready = clibpq_wait_socket(socket, 0, milliseconds)
        if ready < 0 && errno != EINTR { return false }
        if ready > 0 && PQconsumeInput(handle) == 0 { return false }
        return true
    }

    /// Sleeps for a jittered exponential backoff (0.1 s doubling, capped at 5 s), waking at once
    /// if stop is requested.
    private func sleepBackoff(_ failures: Int) {
        let ceiling = min(5.0, 0.1 * pow(2.0, Double(min(failures - 1, 10))))
        control.pause(seconds: ceiling / 2 + Double.random(in: 0...(ceiling / 2)))
    }
}
