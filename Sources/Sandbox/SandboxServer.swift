import CMicroHTTPD
import Foundation
import Synchronization

/// Why the sandbox could not start.
public struct SandboxStartError: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// A local stand-in for `appleid.apple.com` on libmicrohttpd, bound to an IPv4 loopback address.
///
/// Serves `POST /auth/token`, `POST /auth/revoke`, `GET /auth/keys` like Apple (apple-api.md) and the
/// admin API under `/__sandbox/`. Latency and faults apply to `/auth/*` only; delayed requests are
/// suspended (`MHD_suspend_connection`), so no daemon thread is blocked while they wait.
public final class SandboxServer: Sendable {
    private struct DaemonHandle: @unchecked Sendable { let pointer: OpaquePointer }
    private struct Running: Sendable {
        var daemon: DaemonHandle
        var core: ServerCore
        var port: UInt16
    }

    public let configuration: SandboxConfiguration
    public let model: SandboxModel
    private let running = Mutex<Running?>(nil)
    /// A signing key to use instead of generating one at start (tests share one to save time).
    private let presetSigner: (any RS256Signing)?

    /// Simultaneous connections accepted.
    static let connectionLimit: UInt32 = 4096
    /// Idle keep-alive connections are closed after this many seconds.
    static let idleTimeoutSeconds: UInt32 = 120

    public init(configuration: SandboxConfiguration, model: SandboxModel = SandboxModel()) {
        self.configuration = configuration
        self.model = model
        self.presetSigner = nil
    }

    init(configuration: SandboxConfiguration, model: SandboxModel, signer: any RS256Signing) {
        self.configuration = configuration
        self.model = model
        self.presetSigner = signer
    }

    deinit { stop() }

    /// Generates the id_token RSA key and starts listening.
    /// - Returns: the bound TCP port (useful when the configuration asked for port 0).
    /// - Throws: `SandboxStartError` if already running, the host is not IPv4 loopback, key generation
    ///   fails, or libmicrohttpd cannot bind.
    @discardableResult
    public func start() throws -> UInt16 {
        if running.withLock({ $0 != nil }) { throw SandboxStartError(description: "sandbox already running") }
        guard configuration.host.hasPrefix("127."), let address = IPv4.parse(configuration.host) else {
            throw SandboxStartError(description: "host: '\(configuration.host)' is not an IPv4 loopback address")
        }
        Self.raiseFileLimit(to: 65_536)
        let signer: any RS256Signing
        do {
            signer = try presetSigner ?? SandboxSigningKey.generate(bits: configuration.rsaBits)
        } catch {
            throw SandboxStartError(description: "could not generate the id_token RSA key: \(error)")
        }
        let plan = FaultPlan(latency: configuration.latency, rates: configuration.faults, seed: configuration.seed)
        let apple = AppleEndpoints(model: model, signer: signer, refreshIDToken: configuration.refreshIDToken)
        let core = ServerCore(model: model, apple: apple, plan: plan)
        let flags = cmhd_flag_internal_epoll() | cmhd_flag_suspend_resume()
        let threads = UInt32(max(1, configuration.threads))
        let daemon = cmhd_start(flags, configuration.port, address,
                                MHDBridge.accessHandler, Unmanaged.passUnretained(core).toOpaque(),
                                MHDBridge.completedHandler, nil,
                                Self.connectionLimit, threads, Self.idleTimeoutSeconds, 1024)
        guard let daemon else {
            throw SandboxStartError(description: "could not listen on \(configuration.host):\(configuration.port)")
        }
        let port = cmhd_bound_port(daemon)
        running.withLock { $0 = Running(daemon: DaemonHandle(pointer: daemon), core: core, port: port) }
        return port
    }

    /// Stops listening and closes all connections; idempotent. Delayed requests are released first.
    public func stop() {
        guard let r = running.withLock({ state -> Running? in
            defer { state = nil }
            return state
        }) else { return }
        r.core.resumeAllForShutdown()
        MHD_stop_daemon(r.daemon.pointer)
        // The core was passed to libmicrohttpd unretained; keep it alive until the daemon is gone.
        withExtendedLifetime(r.core) {}
    }

    /// The bound port, or 0 when not running.
    public var port: UInt16 { running.withLock { $0?.port ?? 0 } }

    /// `http://HOST:PORT` (no trailing slash).
    public var baseURL: String { "http://\(configuration.host):\(port)" }

    /// The fault/latency controls of the running server, for in-process tests.
    var faultPlan: FaultPlan? { running.withLock { $0?.core.plan } }

    /// The signing keys of the running server (rotation, notification signing).
    var signingKeys: SigningKeySet? { running.withLock { $0?.core.apple.keySet } }

    /// Raises the soft `RLIMIT_NOFILE` toward `target` (bounded by the hard limit); best effort.
    static func raiseFileLimit(to target: rlim_t) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < target else { return }
        limit.rlim_cur = min(target, limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
