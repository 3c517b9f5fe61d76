import Queue

/// A job kind that calls nothing: it still claims, leases and writes result and audit rows.
/// Used to measure the queue alone (`siwa-jobs enqueue noop --items N`).
public struct NoopHandler: JobHandler {
    public static let kind = "noop"
    public var kind: String { Self.kind }

    /// Result outcomes (`siwa.results.outcome`).
    enum Outcome: String, OutcomeCode {
        case ok
    }

    public init() {}

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        items.map { _ in
            { .succeeded(ResultRecord(outcome: Outcome.ok), audit: AuditRecord(action: "noop.done"), effect: nil) }
        }
    }
}
