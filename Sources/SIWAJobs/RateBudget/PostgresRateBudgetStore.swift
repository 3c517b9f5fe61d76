import Clocks
import Postgres

/// `RateBudgetStore` on `siwa.rate_budgets` (sql/0013_rate_budget.sql): each call is one
/// statement, one function call, so the row is locked only for its duration; the database's
/// clock times everything (hosts may disagree about the time).
public struct PostgresRateBudgetStore: RateBudgetStore {
    private let pool: PostgresPool
    private let clock: (any WallClock)?

    /// - Parameter clock: nil (production): the database's clock; a test's clock drives the
    ///   functions' `p_now` instead.
    public init(pool: PostgresPool, clock: (any WallClock)? = nil) {
        self.pool = pool
        self.clock = clock
    }

    /// `siwa.rate_budget_grant`. - Throws: `DatabaseError`.
    public func grant(_ key: RateBudgetKey, ceiling: Double, want: Int, policy: RateBudgetPolicy) async throws -> RateGrant {
        let rows = try await pool.query("""
            SELECT permits, wait_s, paused_s, rate FROM siwa.rate_budget_grant(
                \(key.teamID)::text, \(key.endpoint.rawValue)::text, \(ceiling)::float8, \(want)::integer,
                \(policy.grantWindow.seconds)::float8, \(policy.leastGrantFraction)::float8,
                \(policy.recoveryPerSecond)::float8, \(policy.knee)::float8, \(policy.hold.seconds)::float8,
                \(clock?.now)::timestamptz)
            """)
        guard let row = rows.first else { throw Self.noRow("siwa.rate_budget_grant") }
        let permits: Int = try row.decode("permits")
        let rate: Double = try row.decode("rate")
        if permits > 0 { return .permits(permits, rate: rate) }
        let paused: Double = try row.decode("paused_s")
        if paused > 0 { return .paused(.seconds(fractional: paused)) }
        return .wait(.seconds(fractional: try row.decode("wait_s")), rate: rate)
    }

    /// `siwa.rate_budget_throttled`. - Throws: `DatabaseError`.
    public func throttled(_ key: RateBudgetKey, ceiling: Double, pause: Duration,
                          policy: RateBudgetPolicy) async throws -> ThrottleReceipt {
        let rows = try await pool.query("""
            SELECT rate, paused_s, decreased FROM siwa.rate_budget_throttled(
                \(key.teamID)::text, \(key.endpoint.rawValue)::text, \(ceiling)::float8, \(pause.seconds)::float8,
                \(policy.decrease)::float8, \(policy.floor)::float8, \(policy.grantWindow.seconds)::float8,
                \(policy.recoveryPerSecond)::float8, \(policy.knee)::float8, \(policy.hold.seconds)::float8,
                \(policy.relearn)::float8, \(policy.relearnAfter.seconds)::float8, \(clock?.now)::timestamptz)
            """)
        guard let row = rows.first else { throw Self.noRow("siwa.rate_budget_throttled") }
        return ThrottleReceipt(rate: try row.decode("rate"), pause: .seconds(fractional: try row.decode("paused_s")),
                               decreased: try row.decode("decreased"))
    }

    private static func noRow(_ function: String) -> DatabaseError {
        DatabaseError(kind: .protocolViolation, message: "\(function) returned no row")
    }
}
