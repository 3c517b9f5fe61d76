/// How long the sandbox waits before answering an Apple endpoint (`/auth/...`).
///
/// All values are milliseconds. Samples are clamped to `>= 0`. Admin endpoints are never delayed.
public enum LatencyDistribution: Sendable, Equatable {
    /// Answer immediately.
    case none
    /// Always wait exactly `ms` milliseconds.
    case fixed(Double)
    /// Wait a uniformly random time in `minMs...maxMs` milliseconds.
    case uniform(Double, Double)
    /// Wait a normally distributed time (mean `meanMs`, standard deviation `stddevMs`, milliseconds), clamped at 0.
    case normal(Double, Double)
}

/// Per-request probabilities (each `0...1`, sum `<= 1`) of injecting a fault on an Apple endpoint.
///
/// At most one fault is injected per request. Admin endpoints (`/__sandbox/...`) are never faulted.
public struct FaultRates: Sendable, Equatable {
    /// 500 or 503 with a plain-text (not JSON) body.
    public var serverError: Double
    /// 429 with a `Retry-After` header of `retryAfterSeconds`.
    public var tooManyRequests: Double
    /// Seconds sent in `Retry-After` on injected 429s.
    public var retryAfterSeconds: Int
    /// Close the connection without sending any response.
    public var connectionReset: Double
    /// Hold the request for `stallSeconds` seconds, then answer normally.
    public var stall: Double
    /// Seconds a stalled request is held.
    public var stallSeconds: Double
    /// 502 with an HTML body, like an edge proxy error page.
    public var htmlError: Double
    /// 200 with a JSON body cut short.
    public var truncatedJSON: Double

    /// Defaults: no faults; `Retry-After: 1`; stalls last 30 s.
    public init(serverError: Double = 0, tooManyRequests: Double = 0, retryAfterSeconds: Int = 1,
                connectionReset: Double = 0, stall: Double = 0, stallSeconds: Double = 30,
                htmlError: Double = 0, truncatedJSON: Double = 0) {
        self.serverError = serverError
        self.tooManyRequests = tooManyRequests
        self.retryAfterSeconds = retryAfterSeconds
        self.connectionReset = connectionReset
        self.stall = stall
        self.stallSeconds = stallSeconds
        self.htmlError = htmlError
        self.truncatedJSON = truncatedJSON
    }

    /// Sum of all fault probabilities.
    public var total: Double {
        serverError + tooManyRequests + connectionReset + stall + htmlError + truncatedJSON
    }
}

/// Everything the sandbox server needs to start. Built once, at the edge (CLI flags or a test).
public struct SandboxConfiguration: Sendable, Equatable {
    /// IPv4 loopback address to bind (`127.0.0.0/8` only; the sandbox never listens on other interfaces).
    public var host: String
    /// TCP port; 0 lets the kernel pick a free one (read it from `SandboxServer.start()`).
    public var port: UInt16
    /// Delay applied to Apple endpoints.
    public var latency: LatencyDistribution
    /// Random fault injection on Apple endpoints.
    public var faults: FaultRates
    /// libmicrohttpd worker threads (each runs its own epoll loop).
    public var threads: Int
    /// Seed for the fault/latency RNG; `nil` seeds from the system RNG.
    public var seed: UInt64?
    /// RSA modulus size in bits for the id_token signing key published at `/auth/keys` (2048...4096).
    public var rsaBits: Int
    /// Whether refresh-token validation answers include an `id_token`. Apple's example includes one,
    /// but some real answers omit it (apple-api.md §2.3). RS256 signing is the sandbox's most expensive
    /// step (about 0.37 ms of CPU per token at 2048 bits), so turning it off raises refresh throughput.
    public var refreshIDToken: Bool
    /// The per-team rate limit of `/auth/token`, `/auth/revoke` and `/auth/usermigrationinfo`
    /// (each team its own token bucket; throttled requests get an immediate 429 with
    /// `Retry-After`); nil: none. `POST /__sandbox/rate-limit` changes it at run time.
    public var rateLimit: RateLimitSettings?
    /// Seconds a user's signed refresh id_token is handed out again to the next validation of the
    /// same user (team, client and `sub`), instead of signing a new one: 0 ... 300 (half the
    /// 600 s lifetime, so a reused token has at least 300 s left), 0 signs every answer anew.
    /// Default 300. A reused token keeps its honest `iat`/`exp`; a key rotation ends reuse at once.
    public var idTokenReuseSeconds = 300
    /// Serve HTTPS with a throwaway CA made at start (`SandboxTLS`); nil (the default): plain HTTP.
    public var tls: SandboxTLS? = nil

    /// Defaults: `127.0.0.1`, random port, no latency, no faults, 2 threads, unseeded, RSA-2048,
    /// id_token on refresh, no rate limit.
    public init(host: String = "127.0.0.1", port: UInt16 = 0, latency: LatencyDistribution = .none,
                faults: FaultRates = FaultRates(), threads: Int = 2, seed: UInt64? = nil, rsaBits: Int = 2048,
                refreshIDToken: Bool = true, rateLimit: RateLimitSettings? = nil) {
        self.host = host
        self.port = port
        self.latency = latency
        self.faults = faults
        self.threads = threads
        self.seed = seed
        self.rsaBits = rsaBits
        self.refreshIDToken = refreshIDToken
        self.rateLimit = rateLimit
    }
}
