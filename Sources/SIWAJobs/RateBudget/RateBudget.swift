import AppleID
import Clocks
import Queue

/// One team's rate budget in this process: the `RequestGate` of every Apple client of the team,
/// one shared budget per gated endpoint (README "Apple's rate budget").
public final class RateBudget: RequestGate {
    public let teamID: String
    /// The configured ceiling, requests/s per endpoint, > 0.
    public let ceiling: Double
    private let endpoints: [GatedEndpoint: EndpointBudget]

    /// - Parameters:
    ///   - ceiling: requests/s, > 0 (an unlimited team has no budget at all).
    ///   - clock: times the pauses, the grants' spacing and their expiry.
    public init(teamID: String, ceiling: Double, store: any RateBudgetStore, policy: RateBudgetPolicy = RateBudgetPolicy(),
                clock: any WallClock, logger: Logger) {
        self.teamID = teamID
        self.ceiling = ceiling
        var endpoints: [GatedEndpoint: EndpointBudget] = [:]
        for endpoint in GatedEndpoint.allCases {
            endpoints[endpoint] = EndpointBudget(key: RateBudgetKey(teamID: teamID, endpoint: endpoint), ceiling: ceiling,
                                                 policy: policy, store: store, clock: clock, logger: logger)
        }
        self.endpoints = endpoints
    }

    /// Waits for a permit of the team's `endpoint` budget.
    /// - Throws: `AppleIDError` (see `RequestGate.admit`).
    public func admit(_ endpoint: GatedEndpoint) async throws(AppleIDError) {
        try await endpoints[endpoint]?.admit()
    }

    /// How many calls wait for a permit of the team's `endpoint` budget now.
    public func waiting(_ endpoint: GatedEndpoint) -> Int {
        endpoints[endpoint]?.waiting ?? 0
    }

    /// A 429 lowers the team's rate for `endpoint` and pauses all its workers; other answers
    /// only end an outstanding probe.
    public func observe(_ endpoint: GatedEndpoint, status: Int, retryAfter: Duration?) async {
        await endpoints[endpoint]?.observe(status: status, retryAfter: retryAfter)
    }

    /// A call without an answer ends an outstanding probe (`RateBudgetPolicy.probes`).
    public func unanswered(_ endpoint: GatedEndpoint) async {
        endpoints[endpoint]?.answered()
    }

    /// Ends every wait now and every later one (a graceful stop: waiting items are released,
    /// nothing is sent).
    public func stop() {
        for budget in endpoints.values { budget.stop() }
    }

    /// `stop()`, then waits for the dispatchers to return.
    public func shutdown() async {
        for budget in endpoints.values { await budget.shutdown() }
    }
}

/// Every team's rate budget in this process: built once at the wiring point from the configured
/// ceilings (`SIWAConfiguration.appleRateCeilings()`), handed to the Apple client registry as
/// `gate(teamID:)`, stopped on SIGTERM/SIGINT so that no item sits in a rate wait.
public final class RateBudgets: Sendable {
    private let budgets: [String: RateBudget]

    /// - Parameter ceilings: requests/s per team ID; teams absent (or 0) are unlimited and never
    ///   touch the store.
    public init(ceilings: [String: Double], store: any RateBudgetStore, policy: RateBudgetPolicy = RateBudgetPolicy(),
                clock: any WallClock, logger: Logger) {
        var budgets: [String: RateBudget] = [:]
        for (team, ceiling) in ceilings where ceiling > 0 {
            budgets[team] = RateBudget(teamID: team, ceiling: ceiling, store: store, policy: policy, clock: clock, logger: logger)
        }
        self.budgets = budgets
    }

    /// The team's gate, or nil when the team is unlimited (its calls go out at once).
    public func gate(teamID: String) -> (any RequestGate)? {
        budgets[teamID]
    }

    /// The budgeted teams and their ceilings, requests/s.
    public var ceilings: [String: Double] { budgets.mapValues(\.ceiling) }

    /// Ends every wait now and every later one. Safe from any thread.
    public func stop() {
        for budget in budgets.values { budget.stop() }
    }

    /// `stop()`, then waits for every dispatcher to return.
    public func shutdown() async {
        for budget in budgets.values { await budget.shutdown() }
    }
}
