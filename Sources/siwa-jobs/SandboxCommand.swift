import Foundation
import Commands
import Lifecycle
import Sandbox

/// `siwa-jobs sandbox`: the local stand-in for appleid.apple.com, on a `ServiceGroup`. Prints
/// one line to stdout (`sandbox listening on http://127.0.0.1:PORT`), with `--tls` two
/// (`sandbox CA file: PATH` first, then `sandbox listening on https://127.0.0.1:PORT`), and
/// serves until SIGTERM, SIGINT or SIGHUP.
enum SandboxCommand: Command {
    private static let defaults = SandboxConfiguration()

    static let host = Declare.value("host", "H", .custom("an IPv4 loopback address such as 127.0.0.1",
                                                         SandboxConfiguration.loopbackHost),
                                    default: defaults.host, help: "IPv4 loopback address to bind")
    static let port = Declare.value("port", "N", .integer(in: 0...65535), default: Int(defaults.port),
                                    help: "TCP port, 0 = random free port")
    static let latencyMs = Declare.option("latency-ms", "N", .number(in: 0...600_000),
                                          help: "fixed latency in milliseconds on /auth/* endpoints")
    static let latencyJitterMs = Declare.option("latency-jitter-ms", "N", .number(in: 0...600_000),
                                                help: "with --latency-ms: normal distribution with this stddev (ms)")
    static let latency = Declare.option("latency", "SPEC", .latency,
                                        help: "none | fixed:MS | uniform:MIN-MAX | normal:MEAN,STDDEV (milliseconds)")
    static let fault5xx = probability("fault-5xx", "probability of a 500/503 with a non-JSON body")
    static let fault429 = probability("fault-429", "probability of a 429 with Retry-After")
    static let retryAfter = Declare.value("retry-after", "S", .integer(in: 0...86_400), default: defaults.faults.retryAfterSeconds,
                                          help: "Retry-After seconds on injected 429s")
    static let faultReset = probability("fault-reset", "probability of closing the connection without a response")
    static let faultStall = probability("fault-stall", "probability of holding a request --stall-seconds before answering")
    static let stallSeconds = Declare.value("stall-seconds", "S", .seconds(in: 0...3600), default: .seconds(defaults.faults.stallSeconds),
                                            help: "stall duration")
    static let faultHTML = probability("fault-html", "probability of a 502 with an HTML body")
    static let faultTruncated = probability("fault-truncated", "probability of a 200 with a truncated JSON body")
    static let rateLimit = Declare.value("rate-limit", "RPS", .number(in: 0...1_000_000), default: 0,
                                         help: "per-team limit of /auth/token, /auth/revoke and /auth/usermigrationinfo, "
                                             + "requests/s (token bucket); throttled requests get 429 with Retry-After; 0 = none")
    static let rateBurst = Declare.option("rate-burst", "N", .number(in: 1...10_000_000),
                                          help: "with --rate-limit: the bucket's capacity, requests", defaultText: "a tenth of RPS, at least 1")
    static let rateRetryAfter = Declare.value("rate-retry-after", "S", .integer(in: 0...86_400), default: 1,
                                              help: "with --rate-limit: Retry-After seconds on throttled requests")
    static let threads = Declare.value("threads", "N", .integer(in: 1...64), default: defaults.threads,
                                       help: "libmicrohttpd worker threads")
    static let seed = Declare.option("seed", "N", .custom("an unsigned 64-bit integer") { UInt64($0) },
                                     help: "seed for the fault/latency RNG (deterministic runs)")
    static let rsaBits = Declare.value("rsa-bits", "N", .integer(in: 2048...4096), default: defaults.rsaBits,
                                       help: "id_token RSA key size")
    static let refreshIDToken = Declare.value("refresh-id-token", "on|off", .onOff, default: defaults.refreshIDToken,
                                              help: "include an id_token when validating refresh tokens (off is much cheaper: "
                                                + "RS256 signing dominates the sandbox's CPU)")
    static let tls = Declare.switch("tls", help: "serve HTTPS with a throwaway CA made at start; its certificate is written "
                                        + "to a file whose path is printed (trust it with SIWA_CA_FILE), in a temporary directory removed at stop")
    static let tlsDir = Declare.option("tls-dir", "DIR", .string, help: "with --tls: write the CA certificate to DIR/ca.pem",
                                       defaultText: "a fresh temporary directory")
    static let tlsServerName = Declare.option("tls-server-name", "NAME", .string,
                                              help: "with --tls (tests): a certificate for NAME only, not 127.0.0.1/localhost")
    static let tlsExpired = Declare.switch("tls-expired", help: "with --tls (tests): a certificate whose notAfter is in the past")

    static let spec = CommandSpec(
        "sandbox", abstract: "run the local stand-in for appleid.apple.com",
        discussion: "Faults and latency apply to the Apple endpoints (/auth/*) only, never to /__sandbox/*; at most one "
            + "fault per request, and the fault probabilities must sum to at most 1.",
        options: [host, port, latencyMs, latencyJitterMs, latency, fault5xx, fault429, retryAfter, faultReset, faultStall,
                  stallSeconds, faultHTML, faultTruncated, rateLimit, rateBurst, rateRetryAfter, threads, seed, rsaBits,
                  refreshIDToken, tls, tlsDir, tlsServerName, tlsExpired])

    static var usesDatabase: Bool { false }
    static var checksLogging: Bool { false }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let server = SandboxServer(configuration: try configuration(arguments), model: SandboxModel(clock: context.clock))
        do { try server.start() } catch { throw ServiceUnavailable(what: "sandbox", error: error) }
        if let caFile = server.caFile { say("sandbox CA file: \(caFile)") }
        say("sandbox listening on \(server.baseURL)")
        // SIGHUP too: a terminal that closes stops it the same way (its throwaway CA directory goes).
        _ = try await ServiceGroup(services: [server], configuration: .init(signals: [SIGTERM, SIGINT, SIGHUP], clock: context.clock)).run()
        return .success
    }

    /// The sandbox's configuration from the flags.
    /// - Throws: `UsageError` for `--latency-jitter-ms` without `--latency-ms`, `--latency` with
    ///   `--latency-ms`, or fault probabilities summing above 1.
    static func configuration(_ arguments: ParsedArguments) throws -> SandboxConfiguration {
        var config = SandboxConfiguration()
        config.host = arguments[host]
        config.port = UInt16(arguments[port])
        config.threads = arguments[threads]
        config.seed = arguments[seed]
        config.rsaBits = arguments[rsaBits]
        config.refreshIDToken = arguments[refreshIDToken]
        config.faults = FaultRates(
            serverError: arguments[fault5xx], tooManyRequests: arguments[fault429], retryAfterSeconds: arguments[retryAfter],
            connectionReset: arguments[faultReset], stall: arguments[faultStall], stallSeconds: arguments[stallSeconds].seconds,
            htmlError: arguments[faultHTML], truncatedJSON: arguments[faultTruncated])
        if arguments[rateLimit] > 0 {
            config.rateLimit = RateLimitSettings(rps: arguments[rateLimit], burst: arguments[rateBurst],
                                                 retryAfterSeconds: arguments[rateRetryAfter])
        } else if arguments[rateBurst] != nil {
            throw arguments.usageError("--rate-burst: requires --rate-limit")
        }
        let jitter = arguments[latencyJitterMs]
        if let fixed = arguments[latencyMs] {
            if arguments[latency] != nil { throw arguments.usageError("--latency: cannot be combined with --latency-ms") }
            if let jitter, jitter > 0 {
                config.latency = .normal(fixed, jitter)
            } else {
                config.latency = fixed > 0 ? .fixed(fixed) : .none
            }
        } else if jitter != nil {
            throw arguments.usageError("--latency-jitter-ms: requires --latency-ms")
        } else if let spec = arguments[latency] {
            config.latency = spec
        }
        config.tls = try tlsSettings(arguments)
        if config.faults.total > 1.000_000_1 {
            throw arguments.usageError("--fault-*: fault probabilities must sum to at most 1 (got \(config.faults.total))")
        }
        return config
    }

    /// `--tls` and its test-only shapes.
    /// - Throws: `UsageError` for a `--tls-*` option without `--tls`.
    private static func tlsSettings(_ arguments: ParsedArguments) throws -> SandboxTLS? {
        guard arguments[tls] else {
            if arguments[tlsDir] != nil { throw arguments.usageError("--tls-dir: requires --tls") }
            if arguments[tlsServerName] != nil { throw arguments.usageError("--tls-server-name: requires --tls") }
            if arguments[tlsExpired] { throw arguments.usageError("--tls-expired: requires --tls") }
            return nil
        }
        return SandboxTLS(directory: arguments[tlsDir], serverName: arguments[tlsServerName], expired: arguments[tlsExpired])
    }

    private static func probability(_ name: String, _ help: String) -> Option<Double> {
        Declare.value(name, "P", .fraction, default: 0, help: help)
    }
}

extension ValueType where Value == LatencyDistribution {
    /// `none`, `fixed:MS`, `uniform:MIN-MAX` or `normal:MEAN,STDDEV` (milliseconds).
    static var latency: ValueType<LatencyDistribution> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> LatencyDistribution in
            do throws(SandboxValueError) { return try LatencyDistribution(spec: text) } catch { throw ValueError(expected: error.expected) }
        }
    }
}

extension ValueType where Value == Bool {
    /// `on`, `true`, `yes` or `off`, `false`, `no`.
    static var onOff: ValueType<Bool> {
        .custom("on or off", summary: "on|off", describe: { $0 ? "on" : "off" }) { text in
            switch text {
            case "on", "true", "yes": true
            case "off", "false", "no": false
            default: nil
            }
        }
    }
}
