/// A command-line flag problem. `description` names the flag and the offending value.
public struct SandboxUsageError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The flag as typed, e.g. `--fault-429`.
    public var flag: String
    /// The value given, or `nil` when it was missing.
    public var value: String?
    /// What was expected.
    public var reason: String

    public var description: String {
        if let value { return "\(flag): invalid value '\(value)': \(reason)" }
        return "\(flag): \(reason)"
    }
}

extension SandboxConfiguration {
    /// One-screen help for `siwa-jobs sandbox`.
    public static let usage = """
    usage: siwa-jobs sandbox [flags]
      --host H                 IPv4 loopback address to bind (default 127.0.0.1)
      --port N                 TCP port, 0 = random free port (default 0)
      --latency-ms N           fixed latency in milliseconds on /auth/* endpoints
      --latency-jitter-ms N    with --latency-ms: normal distribution with this stddev (ms)
      --latency SPEC           none | fixed:MS | uniform:MIN-MAX | normal:MEAN,STDDEV (milliseconds)
      --fault-5xx P            probability (0...1) of a 500/503 with a non-JSON body
      --fault-429 P            probability of a 429 with Retry-After
      --retry-after S          Retry-After seconds on injected 429s (default 1)
      --fault-reset P          probability of closing the connection without a response
      --fault-stall P          probability of holding a request --stall-seconds before answering
      --stall-seconds S        stall duration in seconds (default 30)
      --fault-html P           probability of a 502 with an HTML body
      --fault-truncated P      probability of a 200 with a truncated JSON body
      --threads N              libmicrohttpd worker threads (default 2)
      --seed N                 seed for the fault/latency RNG (deterministic runs)
      --rsa-bits N             id_token RSA key size, 2048..4096 (default 2048)
      --refresh-id-token on|off  include an id_token when validating refresh tokens (default on;
                               off is much cheaper: RS256 signing dominates the sandbox's CPU)
    """

    /// Parses `siwa-jobs sandbox` flags (`--flag value` or `--flag=value`).
    ///
    /// - Throws: `SandboxUsageError` naming the flag and value for unknown flags, missing values,
    ///   non-numeric or out-of-range numbers, probabilities outside `0...1` or summing above 1,
    ///   and non-loopback hosts.
    public static func parse(arguments: [String]) throws -> SandboxConfiguration {
        var config = SandboxConfiguration()
        var latencyMs: Double?
        var jitterMs: Double?
        var latencySpec: LatencyDistribution?
        var index = 0
        while index < arguments.count {
            var flag = arguments[index]
            var inline: String?
            if flag.hasPrefix("--"), let eq = flag.firstIndex(of: "=") {
                inline = String(flag[flag.index(after: eq)...])
                flag = String(flag[..<eq])
            }
            index += 1
            func value() throws -> String {
                if let inline { return inline }
                guard index < arguments.count else {
                    throw SandboxUsageError(flag: flag, value: nil, reason: "missing value")
                }
                defer { index += 1 }
                return arguments[index]
            }
            let arg = FlagReader(flag: flag)
            switch flag {
            case "--host": config.host = try arg.loopbackHost(value())
            case "--port": config.port = UInt16(try arg.integer(value(), in: 0...65535))
            case "--latency-ms": latencyMs = try arg.number(value(), in: 0...600_000)
            case "--latency-jitter-ms": jitterMs = try arg.number(value(), in: 0...600_000)
            case "--latency": latencySpec = try arg.latency(value())
            case "--fault-5xx": config.faults.serverError = try arg.probability(value())
            case "--fault-429": config.faults.tooManyRequests = try arg.probability(value())
            case "--retry-after": config.faults.retryAfterSeconds = try arg.integer(value(), in: 0...86_400)
            case "--fault-reset": config.faults.connectionReset = try arg.probability(value())
            case "--fault-stall": config.faults.stall = try arg.probability(value())
            case "--stall-seconds": config.faults.stallSeconds = try arg.number(value(), in: 0...3600)
            case "--fault-html": config.faults.htmlError = try arg.probability(value())
            case "--fault-truncated": config.faults.truncatedJSON = try arg.probability(value())
            case "--threads": config.threads = try arg.integer(value(), in: 1...64)
            case "--seed": config.seed = try arg.seed(value())
            case "--rsa-bits": config.rsaBits = try arg.integer(value(), in: 2048...4096)
            case "--refresh-id-token": config.refreshIDToken = try arg.onOff(value())
            default:
                throw SandboxUsageError(flag: flag, value: nil, reason: "unknown flag (see --help)")
            }
        }
        if jitterMs != nil, latencyMs == nil {
            throw SandboxUsageError(flag: "--latency-jitter-ms", value: nil, reason: "requires --latency-ms")
        }
        if let latencyMs {
            if latencySpec != nil {
                throw SandboxUsageError(flag: "--latency", value: nil, reason: "cannot be combined with --latency-ms")
            }
            if let jitterMs, jitterMs > 0 {
                config.latency = .normal(latencyMs, jitterMs)
            } else {
                config.latency = latencyMs > 0 ? .fixed(latencyMs) : .none
            }
        } else if let latencySpec {
            config.latency = latencySpec
        }
        if config.faults.total > 1.000_000_1 {
            throw SandboxUsageError(flag: "--fault-*", value: String(config.faults.total),
                                    reason: "fault probabilities must sum to at most 1")
        }
        return config
    }
}

/// Converts one flag's text value, producing errors that name the flag.
struct FlagReader {
    var flag: String

    func fail(_ value: String, _ reason: String) -> SandboxUsageError {
        SandboxUsageError(flag: flag, value: value, reason: reason)
    }

    func number(_ text: String, in range: ClosedRange<Double>) throws(SandboxUsageError) -> Double {
        guard let v = Double(text), v.isFinite else { throw fail(text, "expected a number") }
        guard range.contains(v) else {
            throw fail(text, "expected a number in \(Self.show(range.lowerBound))...\(Self.show(range.upperBound))")
        }
        return v
    }

    func integer(_ text: String, in range: ClosedRange<Int>) throws(SandboxUsageError) -> Int {
        guard let v = Int(text) else { throw fail(text, "expected an integer") }
        guard range.contains(v) else { throw fail(text, "expected an integer in \(range.lowerBound)...\(range.upperBound)") }
        return v
    }

    func probability(_ text: String) throws(SandboxUsageError) -> Double {
        guard let v = Double(text), v.isFinite, (0...1).contains(v) else {
            throw fail(text, "expected a probability between 0 and 1")
        }
        return v
    }

    func onOff(_ text: String) throws(SandboxUsageError) -> Bool {
        switch text {
        case "on", "true", "yes": return true
        case "off", "false", "no": return false
        default: throw fail(text, "expected on or off")
        }
    }

    func seed(_ text: String) throws(SandboxUsageError) -> UInt64 {
        guard let v = UInt64(text) else { throw fail(text, "expected an unsigned 64-bit integer") }
        return v
    }

    func loopbackHost(_ text: String) throws(SandboxUsageError) -> String {
        if text == "localhost" { return "127.0.0.1" }
        guard IPv4.parse(text) != nil, text.hasPrefix("127.") else {
            throw fail(text, "expected an IPv4 loopback address such as 127.0.0.1")
        }
        return text
    }

    /// `none`, `fixed:MS`, `uniform:MIN-MAX`, `normal:MEAN,STDDEV` (milliseconds).
    func latency(_ text: String) throws(SandboxUsageError) -> LatencyDistribution {
        let shape = "expected none, fixed:MS, uniform:MIN-MAX or normal:MEAN,STDDEV (milliseconds)"
        if text == "none" { return .none }
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw fail(text, shape) }
        func ms(_ s: Substring) throws(SandboxUsageError) -> Double {
            guard let v = Double(s), v.isFinite, v >= 0, v <= 600_000 else { throw fail(text, shape) }
            return v
        }
        switch parts[0] {
        case "fixed":
            return .fixed(try ms(Substring(parts[1])))
        case "uniform":
            let r = parts[1].split(separator: "-")
            guard r.count == 2 else { throw fail(text, shape) }
            let lo = try ms(r[0]), hi = try ms(r[1])
            guard lo <= hi else { throw fail(text, "uniform minimum must not exceed maximum") }
            return .uniform(lo, hi)
        case "normal":
            let r = parts[1].split(separator: ",")
            guard r.count == 2 else { throw fail(text, shape) }
            return .normal(try ms(r[0]), try ms(r[1]))
        default:
            throw fail(text, shape)
        }
    }

    private static func show(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}

/// Minimal IPv4 dotted-quad parsing (no DNS).
enum IPv4 {
    /// The address in network byte order, or `nil` if `text` is not `a.b.c.d` with each part 0...255.
    static func parse(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCII), let v = UInt8(p) else { return nil }
            bytes.append(v)
        }
        let hostOrder = UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
        return hostOrder.bigEndian
    }
}
