import CMicroHTTPD
import Lifecycle
import Synchronization

/// Runs the handler for each complete request and counts the requests in flight (handed to the
/// handler and not yet completed by libmicrohttpd). Suspending and resuming connections is the
/// business of the loop that serves them (`ServerLoop`).
final class HTTPServerCore: Sendable {
    let handler: HTTPHandler
    let bodyLimit: @Sendable (String) -> Int

    /// Opened when `inFlight` drops to zero.
    private let idle = Mutex<Latch?>(nil)
    /// Requests in flight: an atomic, so the two per-request counts take no lock (the lock is
    /// taken only to open `idle` when the count reaches zero).
    private let inFlightCount = Atomic<Int>(0)

    init(handler: HTTPHandler, bodyLimit: @escaping @Sendable (String) -> Int) {
        self.handler = handler
        self.bodyLimit = bodyLimit
    }

    /// Requests handed to the handler whose response libmicrohttpd has not finished sending.
    var inFlight: Int { inFlightCount.load(ordering: .acquiring) }

    /// Handles one complete request on the thread of `loop`, which serves `connection`: runs an
    /// inline handler and acts on its result, or suspends the connection for an async one.
    func respond(to request: HTTPServerRequest, context: RequestContext, connection: OpaquePointer,
                 loop: ServerLoop) -> MHD_Result {
        inFlightCount.add(1, ordering: .acquiringAndReleasing)   // until `completed()`
        switch handler.kind {
        case .inline(let body):
            return act(on: body(request), context: context, connection: connection, loop: loop)
        case .async(let body):
            guard let ticket = loop.suspendForHandler(connection) else { return MHDBridge.queue(.unavailable, on: connection) }
            // Owned by the suspended connection: the loop resumes it, or a stop already released it.
            Task {
                let result = await body(request)
                context.ready.withLock { $0 = result }
                if case .delay(let delay, _) = result, delay > .zero {
                    loop.deliver(ticket, after: delay)
                } else {
                    loop.deliver(ticket, after: .zero)
                }
            }
            return cmhd_yes()
        }
    }

    /// The loop thread's call after a suspended connection is resumed: the stored answer, a reset,
    /// or 503 when a stop released it before the handler answered.
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
        let latch: Latch? = idle.withLock { latch in
            defer { latch = nil }
            return latch
        }
        latch?.open()
    }

    private func act(on result: HTTPServerResult, context: RequestContext, connection: OpaquePointer,
                     loop: ServerLoop) -> MHD_Result {
        switch result {
        case .answer(let response):
            return MHDBridge.queue(response, on: connection)
        case .reset:
            return cmhd_no()
        case .delay(let delay, let response):
            guard delay > .zero else { return MHDBridge.queue(response, on: connection) }
            context.ready.withLock { $0 = .answer(response) }
            // A stopping server answers at once instead of suspending.
            guard loop.suspend(connection, for: delay) else { return MHDBridge.queue(response, on: connection) }
            return cmhd_yes()
        }
    }

    /// Returns when no request is in flight, or when the calling task is cancelled.
    func untilIdle() async {
        let latch: Latch? = idle.withLock { latch in
            guard inFlightCount.load(ordering: .acquiring) > 0 else { return nil }
            if latch == nil { latch = Latch() }
            return latch
        }
        await latch?.wait()
    }
}
