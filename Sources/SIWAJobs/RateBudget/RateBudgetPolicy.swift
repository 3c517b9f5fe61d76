/// How the shared rate budget behaves (README "Apple's rate budget"). Every default is set here;
/// the SQL functions of `sql/0013_rate_budget.sql` take these values as parameters, so this is
/// their one definition. Apple publishes no numeric limit (it "may throttle" and answers 429):
/// the budget finds the team's limit from 429s and stays under it.
///
/// - On a 429 the shared rate becomes `decrease` × the rate in force (at least `floor`), and a
///   `Retry-After` (else `defaultPause`; at most `maxPause`) pauses every worker of the team and
///   endpoint. 429s that arrive during that pause (the same burst) lower the rate only once.
/// - Then the rate recovers by `recoveryPerSecond` × the ceiling each second, up to `knee` × the
///   rate that met the last 429, where it holds until `hold` has passed without a 429; then it
///   recovers up to the ceiling again (and finds the limit anew if Apple still has one). A 429 met
///   at the hold itself more than `relearnAfter` after the last one (a passing burst, or a limit
///   lowered a little) lowers the learned limit to `relearn` of it only, so such 429s do not
///   ratchet the rate down 10% each; one sooner says the hold is too high and is learned as is.
public struct RateBudgetPolicy: Sendable, Equatable {
    /// A grant is worth at most this much of the current rate: permits are fetched in batches of
    /// `rate × grantWindow` and spaced evenly over it. Default 200 ms.
    public var grantWindow: Duration
    /// A grant's permits may be used this long after it arrives; the rest are dropped (a worker
    /// that dies holding permits loses them, and the bucket refills meanwhile). Default 300 ms.
    public var grantLifetime: Duration
    /// The least grant worth a round trip, as a fraction of a window's worth (at least 1 permit):
    /// below it a worker waits for the bucket to fill. Default 0.25.
    public var leastGrantFraction: Double
    /// The rate after a 429, as a fraction of the rate in force. Default 0.7.
    public var decrease: Double
    /// The least rate, requests/s. Default 1.
    public var floor: Double
    /// Recovery per second without a 429, as a fraction of the ceiling. Default 0.05 (5 %).
    public var recoveryPerSecond: Double
    /// Quick recovery ends at this fraction of the rate that met the last 429. Default 0.9.
    public var knee: Double
    /// How long the rate holds at the knee after the last 429 before recovering further.
    /// Default 300 s.
    public var hold: Duration
    /// A 429 met at the hold (a rate from `relearn` × the hold up to the hold), more than
    /// `relearnAfter` after the last 429, learns this fraction of the limit already learned
    /// instead of its own rate. Default 0.97.
    public var relearn: Double
    /// See `relearn`. Default 30 s.
    public var relearnAfter: Duration
    /// The pause after a 429 without a usable `Retry-After`. Default 1 s.
    public var defaultPause: Duration
    /// The longest shared pause a `Retry-After` may ask for (the item itself still waits the
    /// whole `Retry-After` before its retry). Default 300 s.
    public var maxPause: Duration
    /// Grant round trips failing in a row before the items waiting are failed (transient: they
    /// retry later). Default 3, with 100 ms, 200 ms, ... (at most 2 s) between tries.
    public var failuresBeforeGivingUp: Int
    /// At start and after every pause (a 429 of this process, or the team's pause read at a
    /// grant), one call goes alone and its answer is awaited before more are sent, so a limit
    /// still in force costs one call per process rather than every call admitted before the first
    /// 429 is read. Default true.
    public var probes: Bool
    /// The longest wait for a probe's answer before calls flow again (the client reports every
    /// answer and every failure, so this bounds only a lost report). Default 5 s.
    public var probeTimeout: Duration

    public init(grantWindow: Duration = .milliseconds(200), grantLifetime: Duration = .milliseconds(300),
                leastGrantFraction: Double = 0.25, decrease: Double = 0.7, floor: Double = 1,
                recoveryPerSecond: Double = 0.05, knee: Double = 0.9, hold: Duration = .seconds(300),
                relearn: Double = 0.97, relearnAfter: Duration = .seconds(30), defaultPause: Duration = .seconds(1),
                maxPause: Duration = .seconds(300), failuresBeforeGivingUp: Int = 3, probes: Bool = true,
                probeTimeout: Duration = .seconds(5)) {
        self.grantWindow = grantWindow
        self.grantLifetime = grantLifetime
        self.leastGrantFraction = leastGrantFraction
        self.decrease = decrease
        self.floor = floor
        self.recoveryPerSecond = recoveryPerSecond
        self.knee = knee
        self.hold = hold
        self.relearn = relearn
        self.relearnAfter = relearnAfter
        self.defaultPause = defaultPause
        self.maxPause = maxPause
        self.failuresBeforeGivingUp = failuresBeforeGivingUp
        self.probes = probes
        self.probeTimeout = probeTimeout
    }

    /// The most permits one grant asks for at `rate` requests/s: a window's worth, at least 1.
    func largestGrant(rate: Double) -> Int {
        max(1, Int((rate * grantWindow.seconds).rounded(.up)))
    }

    /// The shared pause a 429 with `retryAfter` asks for.
    func pause(retryAfter: Duration?) -> Duration {
        min(maxPause, retryAfter ?? defaultPause)
    }
}
