import Foundation
import Postgres

/// The safety stop of jobs that judge many stored tokens at once (refresh validation, revocation
/// sweep): pause the job when its first results look like a wrong target or configuration (the
/// wrong Apple base URL, team, client or token key) rather than real revocations. README "Safety
/// stops and cron".
///
/// The rule: more than `thresholdPercent` of the first `window` results (or of all results of a
/// smaller job) are `invalid_grant`. It is judged as soon as the outcome is certain, so a job
/// whose first results are all `invalid_grant` stops after just over half the window. It is not
/// armed for a job of fewer than `minimumItems` items, nor when the client's last finished job of
/// the same kind (with at least `minimumItems` items) was itself above the threshold: that client
/// really has that many dead tokens, and ops saw it then (the job is `exempt`).
public struct SafetyStopRule: Sendable, Equatable {
    public static let defaultThresholdPercent = 50
    public static let defaultWindow = 200
    /// Jobs with fewer items are not judged: a handful of results says little.
    public static let minimumItems = 20

    /// 1...99, or nil when the rule is off.
    public let thresholdPercent: Int?
    /// How many first results are judged (default 200).
    public let window: Int

    /// - Parameters:
    ///   - thresholdPercent: the share of `invalid_grant` that stops the job: more than this many
    ///     percent; 0 (or less) turns the rule off; above 99 counts as 99.
    ///   - window: how many first results are judged, at least `minimumItems`.
    public init(thresholdPercent: Int = defaultThresholdPercent, window: Int = defaultWindow) {
        self.thresholdPercent = thresholdPercent <= 0 ? nil : min(thresholdPercent, 99)
        self.window = max(window, Self.minimumItems)
    }

    /// The rule turned off.
    public static let off = SafetyStopRule(thresholdPercent: 0)

    /// "more than 50% invalid_grant in the first 200 results", or "off".
    public var summary: String {
        guard let thresholdPercent else { return "off" }
        return "pauses the job if more than \(thresholdPercent)% of the first \(window) results are invalid_grant"
    }
}

/// What was armed on a new job (`EnqueuedJob.safetyStop`).
public struct SafetyStopPlan: Sendable, Equatable {
    public enum State: String, Sendable {
        /// The rule judges the job's first results.
        case armed = "open"
        /// Not judged: the client's last finished job was already above the threshold.
        case exempt
    }

    public let state: State
    public let thresholdPercent: Int
    /// The results judged: the rule's window, or the job's item count when smaller.
    public let window: Int
    /// The client's last finished job of this kind and its `invalid_grant` share, if any.
    public let baselineJobID: Int64?
    public let baselinePercent: Double?

    /// One line for the enqueue output.
    public var summary: String {
        let rule = "more than \(thresholdPercent)% invalid_grant in the first \(window) results pauses the job"
        let baseline = baselineJobID.map { id in "; the client's last finished job \(id) had "
            + "\(baselinePercent.map { String(format: "%.1f", $0) } ?? "?")% invalid_grant" } ?? ""
        switch state {
        case .armed: return "safety stop: \(rule)\(baseline)"
        case .exempt: return "safety stop: exempt\(baseline), above the \(thresholdPercent)% threshold already, so this job is not stopped for it"
        }
    }
}

/// A kind's arming of its safety stop at enqueue: the rule, and how its results count as
/// `invalid_grant` (for the client's last known rate).
struct SafetyStopArming: Sendable {
    let rule: SafetyStopRule
    /// A predicate on `siwa.results r`: the result is an `invalid_grant` (constant SQL).
    let resultIsInvalid: String

    /// Inserts the job's `siwa.safety_stops` row in the enqueue transaction: `open`, or `exempt`
    /// when the client's last finished job of the same unique key (with at least
    /// `SafetyStopRule.minimumItems` items) was above the threshold.
    /// - Returns: what was armed; nil when the rule is off or the job too small.
    func arm(jobID: Int64, items: Int, uniqueKey: String?, _ tx: PostgresConnection) async throws -> SafetyStopPlan? {
        guard let threshold = rule.thresholdPercent, items >= SafetyStopRule.minimumItems else { return nil }
        let window = min(rule.window, items)
        let rows = try await tx.query("""
            WITH baseline AS (
                SELECT p.id AS job_id,
                       round(100.0 * count(r.item_id) FILTER (WHERE \(unsafeSQL: resultIsInvalid)) / count(r.item_id), 1) AS percent
                FROM (SELECT id FROM siwa.jobs
                      WHERE unique_key = \(uniqueKey) AND state = 'completed' AND id <> \(jobID)
                        AND item_count >= \(SafetyStopRule.minimumItems)
                      ORDER BY id DESC LIMIT 1) p
                JOIN siwa.results r ON r.job_id = p.id
                GROUP BY p.id
            )
            INSERT INTO siwa.safety_stops (job_id, state, threshold_percent, window_size, baseline_job_id, baseline_percent)
            SELECT \(jobID), CASE WHEN b.percent > \(threshold) THEN 'exempt' ELSE 'open' END, \(threshold), \(window),
                   b.job_id, b.percent
            FROM (SELECT 1) one LEFT JOIN baseline b ON true
            RETURNING state, baseline_job_id, baseline_percent::float8 AS baseline_percent
            """)
        guard let row = rows.first else { return nil }
        let state: String = try row.decode("state")
        return SafetyStopPlan(state: state == "exempt" ? .exempt : .armed, thresholdPercent: threshold, window: window,
                              baselineJobID: try row.decode("baseline_job_id", as: Int64?.self),
                              baselinePercent: try row.decode("baseline_percent", as: Double?.self))
    }
}
