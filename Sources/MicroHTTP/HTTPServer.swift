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
/// `MHD_suspend_connection`, so no daemon thread waits) or drops the connection. Idle connections and stalled requests are closed after
/// the idle timeout, trickling ones at the request deadline, and connections are capped in all
/// and per client address (see `Configuration`). Plain HTTP, or HTTPS with `Configuration.tls`
/// (libmicrohttpd's TLS over GnuTLS; HTTP/1.1 either way).
///
/// A `Service`: `run()` serves (starting the server unless `start()` already did) until
/// `shutdownGracefully()` or cancellation. A server runs once: after a stop it does not start again.
public final class HTTPServer: Service {
    private struct DaemonHandle: @unchecked Sendable { let pointer: OpaquePointer }
    private struct ReaperHandle: @unchecked Sendable { let pointer: UnsafeMutablePointer<cmhd_reaper> }
    /// C copies of the TLS key and certificate, which libmicrohttpd may read until it stops.
    private struct TLSStrings: @unchecked Sendable {
        let key: UnsafeMutablePointer<CChar>
        let certificate: UnsafeMutablePointer<CChar>
        func release() {
            free(key)
            free(certificate)
        }
    }
    private struct Running: Sendable {
        var daemon: DaemonHandle
        var reaper: ReaperHandle?
        var tls: TLSStrings?
        var core: HTTPServerCore
        var port: UInt16
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
        running.withLock { $0.map { Int(cmhd_current_connections($0.daemon.pointer)) } ?? 0 }
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
        let core = HTTPServerCore(handler: handler, bodyLimit: c.bodyLimit)
        let flags = cmhd_flag_internal_epoll() | cmhd_flag_suspend_resume()
        let pointer = Unmanaged.passUnretained(core).toOpaque()
        let deadlineMS = UInt64(clamping: max(0, c.requestDeadline.components.seconds) * 1000
            + c.requestDeadline.components.attoseconds / 1_000_000_000_000_000)
        var reaper: UnsafeMutablePointer<cmhd_reaper>?
        if deadlineMS > 0 {
            reaper = cmhd_reaper_start(deadlineMS, MHDBridge.completedHandler, pointer)
            guard reaper != nil else { throw HTTPServerError(.cannotListen, "could not start the request-deadline thread") }
        }
        let tls = c.tls.flatMap { credentials -> TLSStrings? in
            guard let key = strdup(credentials.privateKeyPEM), let certificate = strdup(credentials.certificatePEM) else { return nil }
            return TLSStrings(key: key, certificate: certificate)
        }
        let daemon = cmhd_start(flags, c.port, address.s_addr, MHDBridge.accessHandler, pointer,
                                MHDBridge.completedHandler, pointer, UInt32(clamping: max(1, c.connectionLimit)),
                                UInt32(clamping: max(1, c.threads)), UInt32(clamping: max(0, c.idleTimeout.components.seconds)),
                                UInt32(clamping: max(1, c.listenBacklog)), UInt32(clamping: max(0, c.connectionsPerIP)), reaper,
                                tls?.key, tls?.certificate, max(0, c.connectionMemoryLimit))
        guard let daemon, c.tls == nil || tls != nil else {
            if let daemon { MHD_stop_daemon(daemon) }
            if let reaper { cmhd_reaper_stop(reaper) }
            tls?.release()
            let refused = c.tls == nil ? "" : " (or the TLS certificate and key were refused)"
            throw HTTPServerError(.cannotListen, "could not listen on \(c.host):\(c.port)\(refused)")
        }
        let port = cmhd_bound_port(daemon)
        running.withLock {
            $0 = Running(daemon: DaemonHandle(pointer: daemon), reaper: reaper.map(ReaperHandle.init), tls: tls, core: core,
                         port: port)
        }
        return port
    }

    /// Stops gracefully: async handlers are no longer started (new requests get 503), delays are no
    /// longer waited; requests in flight get up to `configuration.gracePeriod` to finish and be
    /// sent, then the rest are released (delayed ones answered now, async ones 503), their answers
    /// get up to 50 ms to be written, and every connection is closed. Cancelling the calling task
    /// ends the grace period at once (the answers are still written). Idempotent.
    public func stop() async {
        stopRequested.open()
        guard let r = running.withLock({ $0 }) else { return }
        r.core.beginStopping()
        let grace = configuration.gracePeriod
        if grace > .zero { await configuration.clock.sleep(for: grace, unless: r.core.untilIdle) }
        r.core.resumeAll()
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
        running.withLock { $0 }?.core.beginStopping()
    }

    private func shutDown() {
        guard let r = running.withLock({ state -> Running? in
            defer { state = nil }
            return state
        }) else { return }
        r.core.resumeAll()
        MHD_stop_daemon(r.daemon.pointer)
        if let reaper = r.reaper { cmhd_reaper_stop(reaper.pointer) }   // after the daemon closed every connection
        r.tls?.release()
        // The core was passed to libmicrohttpd unretained; keep it alive until the daemon is gone.
        withExtendedLifetime(r.core) {}
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
