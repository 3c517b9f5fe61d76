import Foundation
import Postgres

/// The states of a job, as stored in `siwa.jobs.state`.
public enum JobState: String, Sendable, CaseIterable {
    /// Its items may be claimed.
    case running
    /// Stopped for a configuration error until an operator resumes it; nothing is claimed.
    case paused
    /// Every item reached a terminal state.
    case completed
    /// Cancelled by an operator; items that come back are cancelled too.
    case cancelled
}

/// The states of an item, as stored in `siwa.job_items.state`: `available` → `running` →
/// `succeeded` | `failed` | `discarded` (terminal), or back to `available` (retry, rescue,
/// release); `cancelled` with its job.
public enum ItemState: String, Sendable, CaseIterable {
    case available, running, succeeded, failed, discarded, cancelled

    /// True for the states an item never leaves (results and audit rows are written on entry).
    public var isTerminal: Bool { self == .succeeded || self == .failed || self == .discarded }
}

extension JobState: PostgresDecodable, PostgresEncodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let state = JobState(rawValue: postgresText) else {
            throw DatabaseError(kind: .decoding, message: "not a job state")
        }
        self = state
    }
    public var postgresText: String? { rawValue }
}

extension ItemState: PostgresDecodable, PostgresEncodable, PostgresArrayElementEncodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let state = ItemState(rawValue: postgresText) else {
            throw DatabaseError(kind: .decoding, message: "not an item state")
        }
        self = state
    }
    public var postgresText: String? { rawValue }
}

/// A job as the worker sees it: one request from cron or ops.
public struct JobRecord: Sendable, Equatable {
    public let id: Int64
    /// The `siwa.jobs.kind` (a `JobHandler.kind`).
    public let kind: String
    /// The job spec as JSON object text; each kind decodes its own spec type from it.
    public let spec: String
    public let state: JobState

    public init(id: Int64, kind: String, spec: String, state: JobState) {
        self.id = id
        self.kind = kind
        self.spec = spec
        self.state = state
    }
}

/// A per-user unit this worker holds a lease on.
public struct ClaimedItem: Sendable, Equatable {
    public let id: Int64
    public let jobID: Int64
    public let accountID: Int64?
    /// Item input as JSON text, for kinds whose items are not accounts.
    public let payload: String?
    /// The attempt this claim started (1-based); completions are guarded by it.
    public let attempt: Int
    public let maxAttempts: Int
    /// When the item's first charged attempt started (the database's clock), for the retry time
    /// budget (`WorkerConfiguration.retryBudget`); nil when the store does not know.
    public let firstAttemptAt: Date?
    /// Its job's priority when it was claimed (`JobPriority`: 0 the most urgent … 9 the least): the
    /// worker starts claimed items of more urgent jobs first. 0 when the store does not say.
    public let priority: Int
    /// True when the item was handed out as part of a claimed range (`PostgresJobStore.claim`: a
    /// planned item, leased by its range's row, its own row untouched until it completes); false
    /// for an item leased on its own row. The completion checks the lease the matching way.
    public let claimedByRange: Bool

    public init(id: Int64, jobID: Int64, accountID: Int64?, payload: String?, attempt: Int, maxAttempts: Int,
                firstAttemptAt: Date? = nil, priority: Int = JobPriority.mostUrgent, claimedByRange: Bool = false) {
        self.id = id
        self.jobID = jobID
        self.accountID = accountID
        self.payload = payload
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.firstAttemptAt = firstAttemptAt
        self.priority = priority
        self.claimedByRange = claimedByRange
    }
}
