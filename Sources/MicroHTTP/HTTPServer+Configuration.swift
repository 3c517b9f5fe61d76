import Clocks

extension HTTPServer {
    /// Where and how an `HTTPServer` listens. Built once, at the edge.
    public struct Configuration: Sendable {
        /// IPv4 address to bind, dotted quad: `127.0.0.1`, `0.0.0.0` (no host names, no IPv6).
        public var host: String
        /// TCP port; 0 lets the kernel pick one (`start()` returns it and `port` reports it).
        public var port: UInt16
        /// libmicrohttpd threads, each running its own epoll loop (at least 1). Default 2.
        public var threads: Int
        /// Simultaneous connections accepted; more wait in the listen backlog. Default 1024.
        public var connectionLimit: Int
        /// A connection idle this long (whole seconds) is closed. Default 60 s.
        public var idleTimeout: Duration
        /// The `listen(2)` backlog. Default 512.
        public var listenBacklog: Int
        /// The largest request body read for a path, bytes. A larger body is discarded unread and
        /// the request handed to the handler with `bodyTooLarge`. Default 64 KiB for every path.
        public var bodyLimit: @Sendable (_ path: String) -> Int
        /// How long a graceful stop (`stop()`, `shutdownGracefully()`) lets requests in flight finish
        /// before the rest are released: delayed ones are answered at once, unanswered async ones
        /// get 503. Zero releases them at once. Default 10 s.
        public var gracePeriod: Duration
        /// The clock that times the grace period. Default `SystemClock()`.
        public var clock: any WallClock

        /// - Parameter bodyLimit: bytes, for every path (see `bodyLimit`).
        public init(host: String = "127.0.0.1", port: UInt16 = 0, threads: Int = 2, connectionLimit: Int = 1024,
                    idleTimeout: Duration = .seconds(60), listenBacklog: Int = 512, bodyLimit: Int = 64 * 1024,
                    gracePeriod: Duration = .seconds(10), clock: any WallClock = SystemClock()) {
            self.host = host
            self.port = port
            self.threads = threads
            self.connectionLimit = connectionLimit
            self.idleTimeout = idleTimeout
            self.listenBacklog = listenBacklog
            self.bodyLimit = { _ in bodyLimit }
            self.gracePeriod = gracePeriod
            self.clock = clock
        }
    }
}
