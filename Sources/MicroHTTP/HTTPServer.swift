import CMicroHTTPD
import Clocks
import Foundation
import Lifecycle
import Synchronization

/// A small HTTP/1.1 server on libmicrohttpd, used by the notification receiver and the sandbox.
///
/// Each request's body is read in full (up to the configuration's body limit for its path; a
/// request announcing more is handed over unread, with `bodyTooLarge` and an empty body), then
/// handed to the `HTTPHandler`, whose result answers, delays (the connection is suspended with
/// `MHD_suspend_connection`, so no thread waits) or drops the connection. Idle connections and
/// stalled requests are closed after the idle timeout, trickling ones at the request deadline, and
/// connections are capped in all and per client address (see `Configuration`). Plain HTTP, or
/// HTTPS with `Configuration.tls` (libmicrohttpd's TLS over GnuTLS; HTTP/1.1 either way).
///
/// `Configuration.threads` event loops (`ServerLoop`), each a libmicrohttpd daemon in
/// external-epoll mode run by a thread of ours, accept from one listening socket; a loop times
/// its own delayed answers, so a delay costs no other thread a wake-up.
///
/// A `Service`: `run()` serves (starting the server unless `start()` already did) until
/// `shutdownGracefully()` or cancellation. A server runs once: after a stop it does not start again.
public final class HTTPServer: Service {
    private struct ReaperHandle: @unchecked Sendable { let pointer: UnsafeMutablePointer<cmhd_reaper> }
    private struct HooksHandle: @unchecked Sendable { let pointer: UnsafeMutablePointer<cmhd_hooks> }
    /// C copies of the TLS key and certificate, which libmicrohttpd may read until it stops.
    private struct TLSStrings: @unchecked Sendable {
        let key: UnsafeMutablePointer<CChar>
        let certificate: UnsafeMutablePointer<CChar>
        func release() {
            free(key)
            free(certificate)
        }
    }
    /// What a started server holds, released by `Running.release()` in reverse order.
    private struct Running: Sendable {
        var listenFD: Int32
        var loops: [ServerLoop] = []
        var reaper: ReaperHandle?
        var hooks: HooksHandle?
        var tls: TLSStrings?
        var core: HTTPServerCore
        var port: UInt16 = 0

        /// Ends the loops, stops their daemons (every connection closed) and frees the rest.
        func release() {
            for loop in loops { loop.finish() }
            for loop in loops {
                guard let daemon = loop.daemon else { continue }
                _ = MHD_quiesce_daemon(daemon)   // the listening socket is closed once, below
                MHD_stop_daemon(daemon)
            }
            cmhd_close(listenFD)
            if let reaper { cmhd_reaper_stop(reaper.pointer) }   // after the daemons closed every connection
            if let hooks { cmhd_hooks_free(hooks.pointer) }
            tls?.release()
            // The core and loops were passed to libmicrohttpd unretained; keep them alive until now.
            withExtendedLifetime((core, loops)) {}
        }
    }

    public let configuration: Configuration
    private let handler: HTTPHandler
    private let running = Mutex<Running?>(nil)
    /// Opened by the first stop request; never closed again.
    private let stopRequested = Latch()

    public init(configuration: Configuration, handler: HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    deinit { stopNow() }

    /// The bound address, as configured.
    public var host: String { configuration.host }

    /// The bound port, or 0 when not running.
    public var port: UInt16 { running.withLock { $0?.port ?? 0 } }

    /// Connections open now (served, idle or mid-request; not those waiting in the listen backlog).
    public var openConnections: Int {
        running.withLock { r in
            (r?.loops ?? []).reduce(0) { sum, loop in sum + (loop.daemon.map { Int(cmhd_current_connections($0)) } ?? 0) }
        }
    }

    /// Connections cut so far because they outlived `configuration.requestDeadline`.
    public var connectionsCutAtDeadline: Int {
        running.withLock { $0?.reaper.map { Int(cmhd_reaper_cut_count($0.pointer)) } ?? 0 }
    }

    /// Requests handed to the handler whose response has not been sent yet.
    public var inFlight: Int { running.withLock { $0?.core.inFlight ?? 0 } }

    /// Starts listening.
    /// - Returns: the bound TCP port (the kernel's pick when the configuration asked for 0).
    /// - Throws: `HTTPServerError` when already running or stopped, when `host` is not an IPv4
    ///   address, when TLS is configured but libmicrohttpd has no TLS support (`tlsUnavailable`),
    ///   or when the address cannot be bound (or the TLS certificate and key are refused).
    @discardableResult
    public func start() throws(HTTPServerError) -> UInt16 {
        let c = configuration
        if running.withLock({ $0 != nil }) { throw HTTPServerError(.alreadyRunning, "server already running") }
        if stopRequested.isOpen { throw HTTPServerError(.stopped, "server was stopped; it does not start again") }
        var address = in_addr()
        guard inet_pton(AF_INET, c.host, &address) == 1 else {
            throw HTTPServerError(.invalidHost, "host: '\(c.host)' is not an IPv4 address")
        }
        if c.tls != nil && !Self.supportsTLS {
            throw HTTPServerError(.tlsUnavailable, "HTTPS needs libmicrohttpd built with TLS support (GnuTLS); this one has none")
        }
        let listenFD = cmhd_listen(address.s_addr, c.port, Int32(clamping: max(1, c.listenBacklog)))
        guard listenFD >= 0 else { throw HTTPServerError(.cannotListen, "could not listen on \(c.host):\(c.port)") }
        var r = Running(listenFD: listenFD, core: HTTPServerCore(handler: handler, bodyLimit: c.bodyLimit))
        do {
            try prepare(&r)
        } catch {
            r.release()
            throw error
        }
        r.port = cmhd_socket_port(listenFD)
        for (i, loop) in r.loops.enumerated() { loop.start(name: "microhttp.\(i)") }
        running.withLock { [r] in $0 = r }
        return r.port
    }

    /// Makes the reaper, the hooks and one daemon and loop per thread (not started yet) into `r`.
    private func prepare(_ r: inout Running) throws(HTTPServerError) {
        let c = configuration
        let core = Unmanaged.passUnretained(r.core).toOpaque()
        let deadlineMS = UInt64(clamping: max(0, c.requestDeadline.components.seconds) * 1000
            + c.requestDeadline.components.attoseconds / 1_000_000_000_000_000)
        if deadlineMS > 0 {
            guard let reaper = cmhd_reaper_start(deadlineMS, MHDBridge.completedHandler, core) else {
                throw HTTPServerError(.cannotListen, "could not start the request-deadline thread")
            }
            r.reaper = ReaperHandle(pointer: reaper)
        }
        let perIP = UInt32(clamping: max(0, c.connectionsPerIP))
        if r.reaper != nil || perIP > 0 {
            guard let hooks = cmhd_hooks_create(r.reaper?.pointer, perIP) else {
                throw HTTPServerError(.cannotListen, "could not allocate the connection hooks")
            }
            r.hooks = HooksHandle(pointer: hooks)
        }
        if let credentials = c.tls {
            guard let key = strdup(credentials.privateKeyPEM), let certificate = strdup(credentials.certificatePEM) else {
                throw HTTPServerError(.cannotListen, "could not listen on \(c.host):\(c.port) (out of memory for the TLS key)")
            }
            r.tls = TLSStrings(key: key, certificate: certificate)
        }
        // At least one connection per loop; the limit is shared out as libmicrohttpd's thread pool does.
        let total = max(1, c.connectionLimit)
        let count = max(1, min(c.threads, total))
        for i in 0..<count {
            let loop = try ServerLoop(core: r.core)
            r.loops.append(loop)
            let limit = total / count + (i < total % count ? 1 : 0)
            let daemon = cmhd_start(r.listenFD, MHDBridge.accessHandler, Unmanaged.passUnretained(loop).toOpaque(),
                                    MHDBridge.completedHandler, core, UInt32(clamping: limit),
                                    UInt32(clamping: max(0, c.idleTimeout.components.seconds)), r.hooks?.pointer,
                                    r.tls?.key, r.tls?.certificate, max(0, c.connectionMemoryLimit))
            guard let daemon, loop.attach(daemon) else {
                let refused = c.tls == nil ? "" : " (or the TLS certificate and key were refused)"
                throw HTTPServerError(.cannotListen, "could not listen on \(c.host):\(c.port)\(refused)")
            }
        }
    }

    /// Stops gracefully: async handlers are no longer started (new requests get 503), delays are no
    /// longer waited; requests in flight get up to `configuration.gracePeriod` to finish and be
    /// sent, then the rest are released (delayed ones answered now, async ones 503), their answers
    /// get up to 50 ms to be written, and every connection is closed. Cancelling the calling task
    /// ends the grace period at once (the answers are still written). Idempotent.
    public func stop() async {
        stopRequested.open()
        guard let r = running.withLock({ $0 }) else { return }
        for loop in r.loops { loop.beginStopping() }
        let grace = configuration.gracePeriod
        if grace > .zero { await configuration.clock.sleep(for: grace, unless: r.core.untilIdle) }
        for loop in r.loops { loop.releaseAll() }
        // Let the answers just released be written out: real time (this waits on sockets), in a
        // fresh task so that it also happens when the caller was cancelled.
        await Task { await SystemClock().sleep(for: .milliseconds(50), unless: r.core.untilIdle) }.value
        shutDown()
    }

    /// Stops at once: suspended connections are released and every connection is closed, without
    /// waiting for answers to be written. Idempotent; does not block.
    public func stopNow() {
        stopRequested.open()
        shutDown()
    }

    /// Serves until `shutdownGracefully()` or until the task is cancelled, then stops as `stop()`
    /// does (after cancellation without the grace period).
    /// - Throws: `HTTPServerError` when the server was not started and cannot start.
    public func run() async throws {
        if !stopRequested.isOpen, running.withLock({ $0 == nil }) { try start() }
        await stopRequested.wait()
        await stop()
    }

    /// Asks `run()` to stop gracefully; from now on async handlers are not started (503) and delays
    /// are not waited. Does not block.
    public func shutdownGracefully() {
        stopRequested.open()
        for loop in running.withLock({ $0?.loops ?? [] }) { loop.beginStopping() }
    }

    private func shutDown() {
        running.withLock { state -> Running? in
            defer { state = nil }
            return state
        }?.release()
    }
}

/// Why an `HTTPServer` could not start. `description` names the address, nothing secret.
public struct HTTPServerError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: Sendable, Equatable {
        case alreadyRunning, stopped, invalidHost, cannotListen, tlsUnavailable
    }

    public let code: Code
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
