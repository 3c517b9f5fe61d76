import CMicroHTTPD
import Dispatch
import Lifecycle
import Synchronization

/// A libmicrohttpd connection pointer, kept only while the connection is suspended (the daemon
/// keeps the connection alive until it is resumed).
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Runs the handler for each complete request and owns the suspend/resume bookkeeping: which
/// connections are suspended, the timers that resume delayed ones, and how many requests are in
/// flight (handed to the handler and not yet completed by libmicrohttpd).
final class HTTPServerCore: Sendable {
    let handler: HTTPHandler
    let bodyLimit: @Sendable (String) -> Int
    /// The deadlines of delayed answers, on one thread (`ResumeSchedule`).
    private let schedule = ResumeSchedule()

    private struct State {
        var nextTicket: UInt64 = 0
        var suspended: [UInt64: ConnectionHandle] = [:]
        var stopping = false
        /// Opened when `inFlight` drops to zero.
        var idle: Latch?
    }
    private let state = Mutex(State())
    /// Requests in flight: an atomic, so the two per-request counts take no lock (the state lock
    /// is taken only to open `idle` when the count reaches zero).
    private let inFlightCount = Atomic<Int>(0)

    init(handler: HTTPHandler, bodyLimit: @escaping @Sendable (String) -> Int) {
        self.handler = handler
        self.bodyLimit = bodyLimit
        schedule.onDue { [weak self] tickets in self?.resume(tickets) }
    }

    /// Requests handed to the handler whose response libmicrohttpd has not finished sending.
    var inFlight: Int { inFlightCount.load(ordering: .acquiring) }

    /// Handles one complete request on the daemon thread: runs an inline handler and acts on its
    /// result, or suspends the connection for an async one.
    func respond(to request: HTTPServerRequest, context: RequestContext, connection: OpaquePointer) -> MHD_Result {
        inFlightCount.add(1, ordering: .acquiringAndReleasing)   // until `completed()`
        switch handler.kind {
        case .inline(let body):
            return act(on: body(request), context: context, connection: connection)
        case .async(let body):
            guard let ticket = suspend(connection) else { return MHDBridge.queue(.unavailable, on: connection) }
            // Owned by the suspended connection: it resumes it, or finds it already released by a stop.
            Task { [self] in
                let result = await body(request)
                deliver(result, ticket: ticket, context: context)
            }
            return cmhd_yes()
        }
    }

    /// The daemon thread's call after a suspended connection is resumed: the stored answer, a
    /// reset, or 503 when a stop resumed it before the handler answered.
    func resumed(_ context: RequestContext, connection: OpaquePointer) -> MHD_Result {
        switch context.ready.withLock({ $0 }) {
        case .answer(let response)?, .delay(_, let response)?: MHDBridge.queue(response, on: connection)
        case .reset?: cmhd_no()
        case nil: MHDBridge.queue(.unavailable, on: connection)
        }
    }

    /// libmicrohttpd finished (or abandoned) a request that reached the handler.
    func completed() {
        guard inFlightCount.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        // `untilIdle` registers its latch under the lock after reading a count above zero, so a
        // latch registered before this decrement is found here.
        let idle: Latch? = state.withLock { s in
            defer { s.idle = nil }
            return s.idle
        }
        idle?.open()
    }

    private func act(on result: HTTPServerResult, context: RequestContext, connection: OpaquePointer) -> MHD_Result {
        switch result {
        case .answer(let response):
            return MHDBridge.queue(response, on: connection)
        case .reset:
            return cmhd_no()
        case .delay(let delay, let response):
            guard delay > .zero else { return MHDBridge.queue(response, on: connection) }
            context.ready.withLock { $0 = .answer(response) }
            // A stopping server answers at once instead of suspending.
            guard let ticket = suspend(connection) else { return MHDBridge.queue(response, on: connection) }
            resume(ticket, after: delay)
            return cmhd_yes()
        }
    }

    /// An async handler's result, for a connection suspended under `ticket`.
    private func deliver(_ result: HTTPServerResult, ticket: UInt64, context: RequestContext) {
        context.ready.withLock { $0 = result }
        if case .delay(let delay, _) = result, delay > .zero {
            resume(ticket, after: delay)
        } else {
            resume(ticket)
        }
    }

    /// Suspends `connection` and returns its ticket, or nil (nothing suspended) when stopping.
    private func suspend(_ connection: OpaquePointer) -> UInt64? {
        state.withLock { s in
            if s.stopping { return nil }
            s.nextTicket += 1
            s.suspended[s.nextTicket] = ConnectionHandle(pointer: connection)
            // Under the lock, so resumeAll() never resumes a connection not yet suspended.
            MHD_suspend_connection(connection)
            return s.nextTicket
        }
    }

    private func resume(_ ticket: UInt64) {
        state.withLock { s in
            if let handle = s.suspended.removeValue(forKey: ticket) { MHD_resume_connection(handle.pointer) }
        }
    }

    /// Resumes `ticket` after `delay`, on the shared timer thread with no leeway (`ResumeSchedule`):
    /// `asyncAfter` lets libdispatch fire up to 10 % late (5 ms on a 50 ms latency), which would
    /// make a delay longer than asked.
    private func resume(_ ticket: UInt64, after delay: Duration) {
        schedule.schedule(ticket, after: delay)
    }

    /// Resumes every connection of `tickets` still suspended, under one lock.
    private func resume(_ tickets: [UInt64]) {
        state.withLock { s in
            for ticket in tickets {
                if let handle = s.suspended.removeValue(forKey: ticket) { MHD_resume_connection(handle.pointer) }
            }
        }
    }

    /// From now on async handlers are not started (503) and delays are not waited.
    func beginStopping() {
        state.withLock { $0.stopping = true }
    }

    /// Returns when no request is in flight, or when the calling task is cancelled.
    func untilIdle() async {
        let latch: Latch? = state.withLock { s in
            guard inFlightCount.load(ordering: .acquiring) > 0 else { return nil }
            if s.idle == nil { s.idle = Latch() }
            return s.idle
        }
        await latch?.wait()
    }

    /// Resumes every suspended connection (delayed ones get their answer now, async ones without an
    /// answer get 503) and refuses new suspensions; call before `MHD_stop_daemon`, which aborts the
    /// process while a connection is suspended.
    func resumeAll() {
        state.withLock { s in
            s.stopping = true
            for handle in s.suspended.values { MHD_resume_connection(handle.pointer) }
            s.suspended.removeAll()
        }
    }
}
