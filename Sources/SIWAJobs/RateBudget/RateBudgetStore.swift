import AppleID

/// Which shared budget: one per team and gated Apple endpoint.
public struct RateBudgetKey: Sendable, Hashable, CustomStringConvertible {
    public let teamID: String
    public let endpoint: GatedEndpoint

    public init(teamID: String, endpoint: GatedEndpoint) {
        self.teamID = teamID
        self.endpoint = endpoint
    }

    public var description: String { "\(teamID) \(endpoint.rawValue)" }
}

/// What one grant round trip answered.
public enum RateGrant: Sendable, Equatable {
    /// `count` permits (at least 1), to be used within the policy's grant lifetime; `rate` is the
    /// shared rate now, requests/s.
    case permits(Int, rate: Double)
    /// None yet: the bucket holds the least grant after `Duration`.
    case wait(Duration, rate: Double)
    /// A `Retry-After` is in force for every worker of the team for `Duration`.
    case paused(Duration)
}

/// What reporting a 429 answered.
public struct ThrottleReceipt: Sendable, Equatable {
    /// The shared rate now, requests/s.
    public var rate: Double
    /// The shared pause now in force.
    public var pause: Duration
    /// True when this 429 lowered the rate (false: another of the same burst already did).
    public var decreased: Bool

    public init(rate: Double, pause: Duration, decreased: Bool) {
        self.rate = rate
        self.pause = pause
        self.decreased = decreased
    }
}

/// The shared token buckets, one per `RateBudgetKey`: `PostgresRateBudgetStore` in production;
/// tests script their own. `ceiling` (requests/s, > 0) is the caller's configured ceiling.
public protocol RateBudgetStore: Sendable {
    /// Takes at most `want` permits (a window's worth at most).
    /// - Throws: the store's error (e.g. `DatabaseError`).
    func grant(_ key: RateBudgetKey, ceiling: Double, want: Int, policy: RateBudgetPolicy) async throws -> RateGrant

    /// Reports a 429: slows the shared rate and pauses every worker for `pause`.
    /// - Throws: the store's error (e.g. `DatabaseError`).
    func throttled(_ key: RateBudgetKey, ceiling: Double, pause: Duration, policy: RateBudgetPolicy) async throws -> ThrottleReceipt
}
