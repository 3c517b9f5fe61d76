import Clocks

/// A source of uniform values in `0..<1` for jitter (retry backoff, poll and rescue spread).
/// Injected, so tests fix it and backoff is checked without sleeping.
public struct JitterSource: Sendable {
    private let next: @Sendable () -> Double

    /// - Parameter next: returns a value in `0..<1` on each call.
    public init(_ next: @escaping @Sendable () -> Double) {
        self.next = next
    }

    /// The system random number generator.
    public static var system: JitterSource { JitterSource { Double.random(in: 0..<1) } }

    /// Always `value` (tests).
    public static func fixed(_ value: Double) -> JitterSource { JitterSource { value } }

    /// The next value in `0..<1`.
    public func callAsFunction() -> Double { next() }
}

/// Retry delays: jittered exponential backoff that honours a server's `Retry-After`.
///
/// The delay after failed attempt `n` (1-based) is `min(cap, base * 2^(n-1))` scaled by a random
/// factor in `[1 - jitter, 1 + jitter]`, and never less than `Retry-After` when the server sent
/// one (RFC 9110 §10.2.3), which is spread by up to `jitter / 2` after it.
public struct BackoffPolicy: Sendable {
    /// Before the first retry. Default 1 s.
    public var base: Duration
    /// Upper bound of the exponential part; `Retry-After` is honoured up to 4 × this. Default 300 s.
    public var cap: Duration
    /// Relative jitter, 0...1. Default 0.2 (±20 %).
    public var jitter: Double

    public init(base: Duration = .seconds(1), cap: Duration = .seconds(300), jitter: Double = 0.2) {
        self.base = base
        self.cap = cap
        self.jitter = min(max(jitter, 0), 1)
    }

    /// How long to wait after failed attempt `attempt`.
    /// - Parameters:
    ///   - retryAfter: the server's `Retry-After`, if it sent one.
    ///   - random: the jitter source (one or two values are drawn).
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?, random: JitterSource) -> Duration {
        let exponent = Double(max(attempt, 1) - 1)
        let capSeconds = cap.seconds
        let raw = min(capSeconds, base.seconds * pow2(exponent))
        let factor = 1 - jitter + 2 * jitter * random()
        let jittered = raw * factor
        guard let retryAfter = retryAfter?.seconds, retryAfter > 0 else { return .seconds(fractional: jittered) }
        // Honour the server: never earlier than it asked, and spread a little after it.
        return .seconds(fractional: max(jittered, min(retryAfter, capSeconds * 4) * (1 + jitter * random() * 0.5)))
    }

    private func pow2(_ x: Double) -> Double {
        var v = 1.0
        var i = 0.0
        while i < x && v < 1e9 { v *= 2; i += 1 }
        return v
    }
}
