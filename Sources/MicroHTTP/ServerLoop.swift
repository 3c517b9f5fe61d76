import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization

/// A libmicrohttpd connection pointer, kept only while the connection is suspended (the daemon
/// keeps the connection alive until it is resumed).
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// One libmicrohttpd daemon in external-epoll mode and the thread that runs it: the thread resumes
/// the connections whose answer is due, then lets the daemon wait (`MHD_run_wait`, in its own
/// `epoll_wait`) until network activity, the earliest delayed answer still waiting, its own next
/// timeout or a write to the loop's wake eventfd (in the daemon's epoll set), and process
/// everything ready.
///
/// Delays are timed here, on the thread that serves the connection, to the millisecond (an answer
/// leaves at most about 1 ms after its delay, never before; the answers due within the same
/// millisecond go out in one pass). A separate timer thread used to resume each delayed connection
/// from outside, which cost two thread wake-ups per request (the timer's, then the daemon's), a
/// lock shared by every thread and an eventfd write: a sixth of the sandbox's CPU at C=256.
///
/// Every suspend and resume of this daemon's connections happens on the loop's thread; other
/// threads (an async handler's task, a stop) leave their request in `state` and wake the loop.
final class ServerLoop: @unchecked Sendable {
    /// What the loop is asked to do. Read and written with the lock held.
    private struct State {
        var heap = DeadlineHeap()
        /// Connections suspended for an async handler, by ticket, until it delivers.
        var waiting: [UInt64: ConnectionHandle] = [:]
        var nextTicket: UInt64 = 0
        /// No new suspensions: delays are answered at once, async handlers get 503.
        var stopping = false
        /// Resume every suspended connection on the next turn.
        var releaseAll = false
        var exit = false
        /// An eventfd signal is on its way; later wakers need not write another.
        var wakePending = false
    }

    let core: HTTPServerCore
    /// The daemon, set once by `attach` before the thread starts (`@unchecked Sendable`: read only
    /// after that).
    private(set) var daemon: OpaquePointer?
    private let wakeFD: Int32
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    private var started = false

    /// - Throws: `HTTPServerError(.cannotListen)` when no eventfd can be made.
    init(core: HTTPServerCore) throws(HTTPServerError) {
        self.core = core
        wakeFD = cmhd_eventfd()
        guard wakeFD >= 0 else { throw HTTPServerError(.cannotListen, "could not make an eventfd for the event loop") }
    }

    deinit { cmhd_close(wakeFD) }

    /// Binds the loop to its daemon (external-epoll mode). False when the wake eventfd cannot join
    /// the daemon's epoll set.
    func attach(_ daemon: OpaquePointer) -> Bool {
        self.daemon = daemon
        return cmhd_daemon_add_wake(daemon, wakeFD) == 0
    }

    /// Starts the loop's thread (after `attach`).
    func start(name: String) {
        started = true
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    // MARK: Called on the loop's thread (from libmicrohttpd's callbacks)

    /// Suspends `connection` until `delay` has passed (then the loop resumes it). False, and nothing
    /// suspended, when the server is stopping.
    func suspend(_ connection: OpaquePointer, for delay: Duration) -> Bool {
        let at = Self.uptime() &+ Self.nanoseconds(delay)
        guard state.withLock({ s in
            if s.stopping { return false }
            s.heap.push(DeadlineHeap.Entry(at: at, connection: ConnectionHandle(pointer: connection)))
            return true
        }) else { return false }
        MHD_suspend_connection(connection)
        return true
    }

    /// Suspends `connection` until `deliver(_:after:)` names the returned ticket; nil, and nothing
    /// suspended, when the server is stopping.
    func suspendForHandler(_ connection: OpaquePointer) -> UInt64? {
        guard let ticket = state.withLock({ s -> UInt64? in
            if s.stopping { return nil }
            s.nextTicket += 1
            s.waiting[s.nextTicket] = ConnectionHandle(pointer: connection)
            return s.nextTicket
        }) else { return nil }
        MHD_suspend_connection(connection)
        return ticket
    }

    // MARK: Called from any thread

    /// Resumes the connection suspended under `ticket` after `delay` (zero: now), unless a stop
    /// already released it.
    func deliver(_ ticket: UInt64, after delay: Duration) {
        let at = Self.uptime() &+ Self.nanoseconds(delay)
        let wake = state.withLock { s -> Bool in
            guard let handle = s.waiting.removeValue(forKey: ticket) else { return false }
            s.heap.push(DeadlineHeap.Entry(at: at, connection: handle))
            return Self.claimWake(&s)
        }
        if wake { cmhd_eventfd_signal(wakeFD) }
    }

    /// From now on delays are answered at once and async handlers are not started (503).
    func beginStopping() {
        state.withLock { $0.stopping = true }
    }

    /// Resumes every suspended connection (delayed ones get their answer now, async ones without an
    /// answer get 503) and refuses new suspensions. Does not wait.
    func releaseAll() {
        let wake = state.withLock { s -> Bool in
            s.stopping = true
            s.releaseAll = true
            return Self.claimWake(&s)
        }
        if wake { cmhd_eventfd_signal(wakeFD) }
    }

    /// Releases every suspended connection, ends the loop and waits for its thread to finish; the
    /// daemon is then the caller's to stop. Idempotent.
    func finish() {
        let (first, wake) = state.withLock { s -> (Bool, Bool) in
            let first = !s.exit
            s.stopping = true
            s.releaseAll = true
            s.exit = true
            return (first, Self.claimWake(&s))
        }
        if wake { cmhd_eventfd_signal(wakeFD) }
        if first && started { finished.wait() }
    }

    // MARK: The loop

    private func run() {
        var due: [ConnectionHandle] = []
        while true {
            due.removeAll(keepingCapacity: true)
            let (exit, wait) = state.withLock { s -> (Bool, Int32) in
                s.wakePending = false
                let now = Self.uptime()
                if s.releaseAll {
                    s.releaseAll = false
                    s.heap.removeAll(into: &due)
                    due.append(contentsOf: s.waiting.values)
                    s.waiting.removeAll()
                } else {
                    s.heap.popDue(at: now, into: &due)
                }
                // Whole milliseconds, rounded up: never woken before the earliest deadline.
                let wait = s.heap.earliest.map { Int32(clamping: ($0 - now + 999_999) / 1_000_000) } ?? -1
                return (s.exit, wait)
            }
            for handle in due { MHD_resume_connection(handle.pointer) }
            if exit { break }
            guard let daemon else { break }
            // Resumed connections are sent at once; libmicrohttpd shortens the wait for its own timeouts.
            if MHD_run_wait(daemon, due.isEmpty ? wait : 0) != cmhd_yes() { usleep(1000) }   // not expected; never spin
        }
        finished.signal()
    }

    /// Marks a wake-up as on its way; true when the caller must signal the eventfd.
    private static func claimWake(_ s: inout State) -> Bool {
        if s.wakePending { return false }
        s.wakePending = true
        return true
    }

    /// `DispatchTime.uptimeNanoseconds` now (the monotonic clock).
    private static func uptime() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// `delay` in nanoseconds, 0 for a negative one, at most about 31 years.
    private static func nanoseconds(_ delay: Duration) -> UInt64 {
        let (seconds, attoseconds) = delay.components
        return UInt64(clamping: min(max(seconds, 0), 1_000_000_000)) * 1_000_000_000
            + UInt64(clamping: max(attoseconds, 0) / 1_000_000_000)
    }
}
