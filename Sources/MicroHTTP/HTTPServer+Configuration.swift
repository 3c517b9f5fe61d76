import CMicroHTTPD
import Clocks

extension HTTPServer {
    /// Where and how an `HTTPServer` listens, and what it tolerates. Built once, at the edge.
    public struct Configuration: Sendable {
        /// IPv4 address to bind, dotted quad: `127.0.0.1`, `0.0.0.0` (no host names, no IPv6).
        public var host: String
        /// TCP port; 0 lets the kernel pick one (`start()` returns it and `port` reports it).
        public var port: UInt16
        /// Event-loop threads (`ServerLoop`), each running a libmicrohttpd daemon on its own epoll
        /// set, all accepting from one listening socket (at least 1, at most `connectionLimit`).
        /// Default 2.
        public var threads: Int
        /// Connections served at once (`MHD_OPTION_CONNECTION_LIMIT`); while that many are open,
        /// new ones wait in the listen backlog (and beyond it are refused by the kernel) until one
        /// closes. Default 1024.
        public var connectionLimit: Int
        /// Connections at once from one client address (`MHD_OPTION_PER_IP_CONNECTION_LIMIT`);
        /// one more is closed at once, unanswered. 0 (the default) sets no per-address limit: a
        /// reverse proxy or a benchmarking worker is one address.
        public var connectionsPerIP: Int
        /// A connection that sends nothing for this long (whole seconds) is closed
        /// (`MHD_OPTION_CONNECTION_TIMEOUT`): idle keep-alive connections, and requests whose
        /// headers or body stopped arriving. Zero: never. Default 60 s.
        public var idleTimeout: Duration
        /// How long a connection has to deliver a complete request and have it answered, from
        /// its opening or from its previous answer; past it the connection is cut (`shutdown(2)`)
        /// however steadily the client trickles bytes, which the idle timeout cannot see. Covers
        /// idle keep-alive time too. Zero (the default): no deadline.
        public var requestDeadline: Duration = .zero
        /// Bytes of each connection's memory pool (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`): the
        /// request line and header fields, the read buffer and the response's header block must
        /// fit (a request whose header fields do not is answered 431). libmicrohttpd zeroes the
        /// pool after every request, so a smaller pool costs less per request. 0 (the default):
        /// libmicrohttpd's 32 KiB. Bodies are not held in it (they are handed over in chunks).
        public var connectionMemoryLimit: Int = 0
        /// The `listen(2)` backlog. Default 512.
        public var listenBacklog: Int
        /// The largest request body read for a path, bytes. A request announcing more
        /// (`Content-Length`) goes to the handler at once with `bodyTooLarge` and an empty body,
        /// before any of the body is read, and the connection is closed after the answer; a body
        /// without `Content-Length` that grows past the limit gets the connection closed
        /// unanswered. Default 64 KiB for every path.
        public var bodyLimit: @Sendable (_ path: String) -> Int
        /// How long a graceful stop (`stop()`, `shutdownGracefully()`) lets requests in flight finish
        /// before the rest are released: delayed ones are answered at once, unanswered async ones
        /// get 503. Zero releases them at once. Default 10 s.
        public var gracePeriod: Duration
        /// The clock that times the grace period. Default `SystemClock()`.
        public var clock: any WallClock
        /// Serve HTTPS with this certificate and key (libmicrohttpd's TLS, GnuTLS on Debian)
        /// instead of plain HTTP. nil (the default): plain HTTP.
        public var tls: TLSCredentials? = nil

        /// - Parameter bodyLimit: bytes, for every path (see `bodyLimit`).
        public init(host: String = "127.0.0.1", port: UInt16 = 0, threads: Int = 2, connectionLimit: Int = 1024,
                    connectionsPerIP: Int = 0, idleTimeout: Duration = .seconds(60), listenBacklog: Int = 512,
                    bodyLimit: Int = 64 * 1024, gracePeriod: Duration = .seconds(10), clock: any WallClock = SystemClock()) {
            self.host = host
            self.port = port
            self.threads = threads
            self.connectionLimit = connectionLimit
            self.connectionsPerIP = connectionsPerIP
            self.idleTimeout = idleTimeout
            self.listenBacklog = listenBacklog
            self.bodyLimit = { _ in bodyLimit }
            self.gracePeriod = gracePeriod
            self.clock = clock
        }
    }
}

extension HTTPServer {
    /// What an HTTPS server presents: its certificate chain and private key, both PEM
    /// (`MHD_OPTION_HTTPS_MEM_CERT`, `MHD_OPTION_HTTPS_MEM_KEY`). The key is a secret:
    /// `description` shows neither.
    public struct TLSCredentials: Sendable, Equatable, CustomStringConvertible {
        /// The server certificate first, then any intermediates (`-----BEGIN CERTIFICATE-----`).
        public var certificatePEM: String
        /// The certificate's private key, unencrypted PKCS#8 (`PRIVATE KEY`) or SEC1/PKCS#1.
        public var privateKeyPEM: String

        public init(certificatePEM: String, privateKeyPEM: String) {
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
        }

        public var description: String { "TLSCredentials(certificate: \(certificatePEM.utf8.count) bytes PEM, key: redacted)" }
    }

    /// True when this libmicrohttpd can serve HTTPS (`MHD_is_feature_supported(MHD_FEATURE_TLS)`;
    /// Debian builds it with GnuTLS).
    public static var supportsTLS: Bool { cmhd_supports_tls() != 0 }
}
