import CMicroHTTPD
import Synchronization

/// A libmicrohttpd connection pointer kept while the connection is suspended.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Dispatches complete requests to the async handler and owns the suspend/resume bookkeeping.
final class HTTPServerCore: Sendable {
    let handler: @Sendable (HTTPServerRequest) async -> HTTPServerResponse
    let bodyLimit: Int

    private struct State {
        var next: UInt64 = 0
        var waiting: [UInt64: ConnectionHandle] = [:]
        var stopping = false
    }
    private let state = Mutex(State())

    init(handler: @escaping @Sendable (HTTPServerRequest) async -> HTTPServerResponse, bodyLimit: Int) {
        self.handler = handler
        self.bodyLimit = bodyLimit
    }

    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Suspends `connection` and runs the handler; its answer is stored in `context` and the
    /// connection resumed. Returns false (nothing suspended) when the server is stopping.
    func dispatch(_ request: HTTPServerRequest, context: RequestContext, connection: OpaquePointer) -> Bool {
        let ticket: UInt64? = state.withLock { s in
            if s.stopping { return nil }
            s.next += 1
            s.waiting[s.next] = ConnectionHandle(pointer: connection)
            // Under the lock, so resumeAll() never resumes a connection not yet suspended.
            MHD_suspend_connection(connection)
            return s.next
        }
        guard let ticket else { return false }
        let handler = self.handler
        Task { [self] in
            let response = await handler(request)
            context.ready.withLock { $0 = response }
            resume(ticket)
        }
        return true
    }

    private func resume(_ ticket: UInt64) {
        state.withLock { s in
            if let handle = s.waiting.removeValue(forKey: ticket) { MHD_resume_connection(handle.pointer) }
        }
    }

    func beginStopping() {
        state.withLock { $0.stopping = true }
    }

    /// Resumes every suspended connection (they are answered 503) and refuses new suspensions;
    /// call before `MHD_stop_daemon`, which aborts the process while a connection is suspended.
    func resumeAll() {
        state.withLock { s in
            s.stopping = true
            for handle in s.waiting.values { MHD_resume_connection(handle.pointer) }
            s.waiting.removeAll()
        }
    }
}
