import CMicroHTTPD
import Foundation
import Synchronization

/// A small HTTP/1.1 server on libmicrohttpd with an async handler per request.
///
/// Each request's body is read in full (up to `bodyLimit` bytes; beyond that the request is
/// handed over with `bodyTooLarge` and an empty body), then the connection is suspended
/// (`MHD_suspend_connection`) while `handler` runs on the Swift concurrency pool, and resumed
/// to send its response. No daemon thread waits on the handler. Plain HTTP only: terminate TLS in
/// front of it (a reverse proxy or load balancer).
public final class HTTPServer: Sendable {
    private struct DaemonHandle: @unchecked Sendable { let pointer: OpaquePointer }
    private struct Running: Sendable {
        var daemon: DaemonHandle
        var core: HTTPServerCore
        var port: UInt16
    }

    public let host: String
    public let requestedPort: UInt16
    public let bodyLimit: Int
    public let threads: Int
    private let handler: @Sendable (HTTPServerRequest) async -> HTTPServerResponse
    private let running = Mutex<Running?>(nil)

    /// - Parameters:
    ///   - host: IPv4 address to bind, e.g. `127.0.0.1` or `0.0.0.0`.
    ///   - port: TCP port; 0 lets the kernel pick (read it from `start()`).
    ///   - bodyLimit: largest request body read, in bytes.
    ///   - threads: libmicrohttpd threads (each runs an epoll loop).
    ///   - handler: answers one request; it must not throw and should not block a thread.
    public init(host: String, port: UInt16, bodyLimit: Int, threads: Int = 2,
                handler: @escaping @Sendable (HTTPServerRequest) async -> HTTPServerResponse) {
        self.host = host
        self.requestedPort = port
        self.bodyLimit = max(0, bodyLimit)
        self.threads = max(1, threads)
        self.handler = handler
    }

    deinit {
        if let r = running.withLock({ $0 }) {
            r.core.resumeAll()
            MHD_stop_daemon(r.daemon.pointer)
        }
    }

    /// Starts listening.
    /// - Returns: the bound TCP port.
    /// - Throws: `HTTPServerError` if already running, `host` is not an IPv4 address, or the
    ///   address cannot be bound.
    @discardableResult
    public func start() throws -> UInt16 {
        if running.withLock({ $0 != nil }) { throw HTTPServerError("server already running") }
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else {
            throw HTTPServerError("host: '\(host)' is not an IPv4 address")
        }
        let core = HTTPServerCore(handler: handler, bodyLimit: bodyLimit)
        let flags = cmhd_flag_internal_epoll() | cmhd_flag_suspend_resume()
        let daemon = cmhd_start(flags, requestedPort, address.s_addr,
                                HTTPBridge.accessHandler, Unmanaged.passUnretained(core).toOpaque(),
                                HTTPBridge.completedHandler, nil, 1024, UInt32(threads), 60, 512)
        guard let daemon else { throw HTTPServerError("could not listen on \(host):\(requestedPort)") }
        let port = cmhd_bound_port(daemon)
        running.withLock { $0 = Running(daemon: DaemonHandle(pointer: daemon), core: core, port: port) }
        return port
    }

    /// The bound port, or 0 when not running.
    public var port: UInt16 { running.withLock { $0?.port ?? 0 } }

    /// Requests whose handler is running now.
    public var inFlight: Int { running.withLock { $0?.core.waitingCount ?? 0 } }

    /// Stops: new requests get 503, handlers already running get up to `graceSeconds` to finish
    /// and send their answers, then every connection is closed. Idempotent.
    public func stop(graceSeconds: Double = 10) async {
        guard let r = running.withLock({ $0 }) else { return }
        r.core.beginStopping()
        let deadline = Date().addingTimeInterval(max(0, graceSeconds))
        while r.core.waitingCount > 0, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Give resumed connections a moment to be written out.
        try? await Task.sleep(for: .milliseconds(50))
        guard running.withLock({ state -> Bool in
            defer { state = nil }
            return state != nil
        }) else { return }
        r.core.resumeAll()
        MHD_stop_daemon(r.daemon.pointer)
        withExtendedLifetime(r.core) {}
    }
}
