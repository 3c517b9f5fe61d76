/// Why a textual sandbox setting was refused: what was expected instead.
public struct SandboxValueError: Error, CustomStringConvertible, Sendable, Equatable {
    /// E.g. `none, fixed:MS, uniform:MIN-MAX or normal:MEAN,STDDEV (milliseconds)`.
    public var expected: String
    public var description: String { "expected \(expected)" }
}

extension LatencyDistribution {
    /// The shapes `init(spec:)` accepts.
    public static let specShapes = "none, fixed:MS, uniform:MIN-MAX or normal:MEAN,STDDEV (milliseconds)"

    /// Parses `none`, `fixed:MS`, `uniform:MIN-MAX` or `normal:MEAN,STDDEV` (milliseconds, each
    /// 0...600000), e.g. the `--latency` flag of `siwa-jobs sandbox`.
    /// - Throws: `SandboxValueError` saying which shape was expected (or that a uniform minimum
    ///   exceeds its maximum).
    public init(spec text: String) throws(SandboxValueError) {
        let shape = SandboxValueError(expected: Self.specShapes)
        if text == "none" {
            self = .none
            return
        }
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw shape }
        func ms(_ s: Substring) throws(SandboxValueError) -> Double {
            guard let v = Double(s), v.isFinite, v >= 0, v <= 600_000 else { throw shape }
            return v
        }
        switch parts[0] {
        case "fixed":
            self = .fixed(try ms(Substring(parts[1])))
        case "uniform":
            let r = parts[1].split(separator: "-")
            guard r.count == 2 else { throw shape }
            let lo = try ms(r[0]), hi = try ms(r[1])
            guard lo <= hi else { throw SandboxValueError(expected: "a uniform minimum that does not exceed its maximum") }
            self = .uniform(lo, hi)
        case "normal":
            let r = parts[1].split(separator: ",")
            guard r.count == 2 else { throw shape }
            self = .normal(try ms(r[0]), try ms(r[1]))
        default:
            throw shape
        }
    }
}

extension SandboxConfiguration {
    /// `text` as an address the sandbox may bind: an IPv4 loopback address (`127.0.0.0/8`), with
    /// `localhost` meaning `127.0.0.1`; nil for anything else (the sandbox never listens elsewhere).
    public static func loopbackHost(_ text: String) -> String? {
        if text == "localhost" { return "127.0.0.1" }
        guard IPv4.parse(text) != nil, text.hasPrefix("127.") else { return nil }
        return text
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
