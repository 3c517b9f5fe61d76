/// Retry delays: jittered exponential backoff that honours a server's `Retry-After`.
///
/// Delay for attempt `n` (1-based, the attempt that just failed) is
/// `min(cap, base * 2^(n-1))` seconds scaled by a random factor in `[1 - jitter, 1 + jitter]`,
/// and never less than `Retry-After` when the server sent one.
public struct BackoffPolicy: Sendable {
    /// Seconds before the first retry. Default 1 s.
    public var baseSeconds: Double
    /// Upper bound in seconds. Default 300 s.
    public var capSeconds: Double
    /// Relative jitter, 0...1. Default 0.2 (±20 %).
    public var jitter: Double

    public init(baseSeconds: Double = 1, capSeconds: Double = 300, jitter: Double = 0.2) {
        self.baseSeconds = baseSeconds
        self.capSeconds = capSeconds
        self.jitter = min(max(jitter, 0), 1)
    }

    /// Seconds to wait after failed attempt `attempt`. `random` returns a value in 0..<1 (injected for tests).
    public func delay(afterAttempt attempt: Int, retryAfterSeconds: Double?, random: () -> Double) -> Double {
        let exponent = Double(max(attempt, 1) - 1)
        let raw = min(capSeconds, baseSeconds * pow2(exponent))
        let factor = 1 - jitter + 2 * jitter * random()
        let jittered = raw * factor
        guard let retryAfter = retryAfterSeconds, retryAfter > 0 else { return jittered }
        // Honour the server: never earlier than it asked, and spread a little after it.
        return max(jittered, min(retryAfter, capSeconds * 4) * (1 + jitter * random() * 0.5))
    }

    private func pow2(_ x: Double) -> Double {
        var v = 1.0
        var i = 0.0
        while i < x && v < 1e9 { v *= 2; i += 1 }
        return v
    }
}
