import Foundation
import Lifecycle
import MicroHTTP
import Synchronization

/// Why the sandbox could not start.
public struct SandboxStartError: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// A local stand-in for `appleid.apple.com`, served by `MicroHTTP.HTTPServer` on an IPv4 loopback
/// address.
///
/// Serves `POST /auth/token`, `POST /auth/revoke`, `GET /auth/keys` and
/// `POST /auth/usermigrationinfo` like Apple (apple-api.md) and the admin API under `/__sandbox/`.
/// Latency and faults apply to `/auth/*` only; delayed requests are suspended, so no server thread
/// waits while they do.
///
/// A `Service`: `run()` serves (starting first unless `start()` already did) until
/// `shutdownGracefully()` or cancellation; either stop answers delayed requests at once, as
/// `stop()` does.
public final class SandboxServer: Service {
    public let configuration: SandboxConfiguration
    public let model: SandboxModel
    /// A signing key to use instead of generating one at start (tests share one to save time).
    private let presetSigner: (any RS256Signing)?
    /// The server and handler of a started sandbox.
    private let running = Mutex<(http: HTTPServer, handler: SandboxHandler)?>(nil)
    /// Set by `shutdownGracefully()` (sticky), so a stop asked before `run()` starts still counts.
    private let stopAsked = Latch()
    /// With `configuration.tls`: the CA certificate file written at start, and the directory made
    /// for it (when `SandboxTLS.directory` was nil), removed by `stop()`.
    private let writtenCAFile = Mutex<(file: String, madeDirectory: String?)?>(nil)

    /// Simultaneous connections accepted.
    static let connectionLimit = 4096
    /// Idle keep-alive connections are closed after this long.
    static let idleTimeout: Duration = .seconds(120)
    /// Each connection's memory pool, bytes (`HTTPServer.Configuration.connectionMemoryLimit`):
    /// Apple's requests carry a few hundred bytes of header fields, and libmicrohttpd zeroes the
    /// whole pool after every request (its 32 KiB default was 4 % of the sandbox's CPU).
    static let connectionMemory = 8 * 1024
    /// The listen backlog.
    static let listenBacklog = 1024

    /// - Parameter model: the state served; its clock is the sandbox's clock.
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

    /// Generates the id_token RSA key (and with `configuration.tls` the throwaway CA, the server
    /// certificate and the CA file: `caFile`) and starts listening.
    /// - Returns: the bound TCP port (useful when the configuration asked for port 0).
    /// - Throws: `SandboxStartError` if already running, the host is not IPv4 loopback, key generation
    ///   fails, the certificates or the CA file cannot be made, libmicrohttpd has no TLS support,
    ///   or the address cannot be bound.
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
        if configuration.tls != nil && !HTTPServer.supportsTLS {
            throw SandboxStartError(description: "HTTPS needs libmicrohttpd built with TLS support (GnuTLS); this one has none")
        }
        let tls = try configuration.tls?.prepare()
        let plan = FaultPlan(latency: configuration.latency, rates: configuration.faults, seed: configuration.seed)
        let apple = AppleEndpoints(model: model, signer: signer, refreshIDToken: configuration.refreshIDToken,
                                   idTokenReuseSeconds: configuration.idTokenReuseSeconds)
        let handler = SandboxHandler(model: model, apple: apple, plan: plan,
                                     throttle: RateThrottle(defaultLimit: configuration.rateLimit))
        var settings = httpConfiguration(address: address)
        settings.tls = tls?.credentials
        let http = HTTPServer(configuration: settings, handler: .inline(handler.respond))
        let port: UInt16
        do {
            port = try http.start()
        } catch {
            if let made = tls?.madeDirectory { try? FileManager.default.removeItem(atPath: made) }
            throw SandboxStartError(description: "could not listen on \(configuration.host):\(configuration.port)")
        }
        writtenCAFile.withLock { $0 = tls.map { ($0.caFile, $0.madeDirectory) } }
        running.withLock { $0 = (http, handler) }
        return port
    }

    /// The HTTP server's settings: the configured address (as `IPv4.parse` read it), threads and
    /// port, the per-path body limits, and no grace period (a stop answers delayed requests at once).
    private func httpConfiguration(address: UInt32) -> HTTPServer.Configuration {
        let octets = withUnsafeBytes(of: address) { Array($0) }   // network byte order
        var c = HTTPServer.Configuration(
            host: octets.map(String.init).joined(separator: "."), port: configuration.port,
            threads: max(1, configuration.threads), connectionLimit: Self.connectionLimit,
            idleTimeout: Self.idleTimeout, listenBacklog: Self.listenBacklog, gracePeriod: .zero, clock: model.clock)
        c.bodyLimit = SandboxHandler.bodyLimit(path:)
        c.connectionMemoryLimit = Self.connectionMemory
        return c
    }

    /// Stops listening and closes all connections; idempotent. Delayed requests are answered first.
    /// A CA directory the sandbox made itself is removed (best effort: a stop never throws).
    public func stop() {
        running.withLock { state -> (http: HTTPServer, handler: SandboxHandler)? in
            defer { state = nil }
            return state
        }?.http.stopNow()
        let made = writtenCAFile.withLock { written -> String? in
            defer { written?.madeDirectory = nil }
            return written?.madeDirectory
        }
        if let made { try? FileManager.default.removeItem(atPath: made) }
    }

    /// Serves until `shutdownGracefully()` or cancellation, then stops as `stop()` does.
    /// - Throws: `SandboxStartError` when the sandbox was not started and cannot start.
    public func run() async throws {
        if !stopAsked.isOpen, running.withLock({ $0 == nil }) { try start() }
        guard let http = running.withLock({ $0?.http }) else { return }
        if stopAsked.isOpen { http.shutdownGracefully() }
        try await http.run()
        stop()
    }

    /// Asks `run()` to stop. Does not block.
    public func shutdownGracefully() {
        stopAsked.open()
        running.withLock { $0?.http }?.shutdownGracefully()
    }

    /// The bound port, or 0 when not running.
    public var port: UInt16 { running.withLock { $0?.http.port ?? 0 } }

    /// `http://HOST:PORT`, or `https://HOST:PORT` with `configuration.tls` (no trailing slash).
    public var baseURL: String { "\(configuration.tls == nil ? "http" : "https")://\(configuration.host):\(port)" }

    /// With `configuration.tls`, once started: the CA certificate file (PEM) a client trusts to
    /// reach this sandbox (`SIWA_CA_FILE`); nil for plain HTTP. Gone after `stop()` when the
    /// sandbox made its directory.
    public var caFile: String? { writtenCAFile.withLock { $0?.file } }

    /// The fault/latency controls of the running server, for in-process tests.
    var faultPlan: FaultPlan? { running.withLock { $0?.handler.plan } }

    /// Users whose refresh id_token the running server keeps for reuse (`IDTokenCache`).
    var idTokenCacheCount: Int { running.withLock { $0?.handler.apple.idTokens.count ?? 0 } }

    /// The signing keys of the running server (rotation, notification signing).
    var signingKeys: SigningKeySet? { running.withLock { $0?.handler.apple.keySet } }

    /// Raises the soft `RLIMIT_NOFILE` toward `target` (bounded by the hard limit); best effort.
    static func raiseFileLimit(to target: rlim_t) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < target else { return }
        limit.rlim_cur = min(target, limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
