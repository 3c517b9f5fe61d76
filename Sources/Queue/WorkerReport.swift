import Postgres

/// What a worker run did. The CLI decides the process exit status from these facts.
///
/// The item counts are read from what the database accepted: a completion counts once its
/// statement committed and wrote the item (never from what a handler returned), so they add up
/// to the items' states in `siwa.job_items`.
public struct WorkerReport: Sendable {
    public var succeeded = 0
    /// Permanent per-item failures.
    public var failed = 0
    /// Items discarded after transient failures used their attempts and their retry budget, or
    /// whose last attempt was lost with a worker (rescue).
    public var discarded = 0
    /// Attempts rescheduled after a transient failure (charged).
    public var retried = 0
    /// Items given back uncharged (shutdown, items not prepared).
    public var released = 0
    /// Calls that never reached the upstream, given back uncharged.
    public var unreached = 0
    /// Completions this worker could not write before it stopped (the database refused or was
    /// away): their leases expire and the items are redone by a later run.
    public var unwritten = 0
    /// Completions the database did not apply because the lease had passed to another worker.
    public var superseded = 0
    /// The most completions held in memory at once, waiting to be written (backpressure bound:
    /// `WorkerConfiguration.maxUnflushed`).
    public var peakUnflushed = 0
    /// Reasons of jobs this worker paused for configuration errors.
    public var pausedJobs: [Int64: String] = [:]
    /// Items left for a later run (scheduled beyond the drain horizon, or leased elsewhere).
    public var leftPending = 0
    /// Set when the run ended on a database failure it could not ride out: a statement the
    /// database refused for a reason retrying cannot fix (its `meaning` is `misconfigured`,
    /// `permission`, `schemaMissing` or `unexpected`), or an outage a drain gave up on.
    public var databaseFailure: DatabaseError?
    /// Set when a drain stopped because the upstream (the service the kinds call) looked down.
    public var upstreamFailure: String?
    /// Set when a drain was stopped (SIGTERM/SIGINT) before its work was done: what was left.
    public var stoppedWithWorkLeft: String?
    /// Running jobs with items left whose kind this process cannot run
    /// (`WorkerConfiguration.unavailableKinds`), with why; found by a drain when it is done.
    public var unrunnable: [UnrunnableJob] = []
    /// True when the main loop ended because a stop was requested (not because nothing was due).
    var endedByStop = false

    public init() {}

    /// The report as structured log fields (`worker stopped`), without failure texts.
    public var logFields: [String: String] {
        [
            "succeeded": "\(succeeded)", "failed": "\(failed)", "discarded": "\(discarded)",
            "retried": "\(retried)", "released": "\(released)", "unreached": "\(unreached)",
            "unwritten": "\(unwritten)", "superseded": "\(superseded)", "peak_unflushed": "\(peakUnflushed)",
            "paused_jobs": "\(pausedJobs.count)", "left_pending": "\(leftPending)",
            "database_failure": "\(databaseFailure != nil)", "upstream_failure": "\(upstreamFailure != nil)",
            "stopped_with_work_left": "\(stoppedWithWorkLeft != nil)", "unrunnable_jobs": "\(unrunnable.count)",
        ]
    }

    /// Adds the counts of completions the database accepted.
    mutating func add(accepted: [CompletionTally: Int]) {
        succeeded += accepted[.succeeded] ?? 0
        failed += accepted[.failed] ?? 0
        discarded += accepted[.discarded] ?? 0
        retried += accepted[.retried] ?? 0
        released += accepted[.released] ?? 0
        unreached += accepted[.unreached] ?? 0
    }
}

/// A running job with work left that this process has no handler for.
public struct UnrunnableJob: Sendable, Equatable {
    public let job: JobRecord
    /// Why this process cannot run its kind (from `WorkerConfiguration.unavailableKinds`).
    public let reason: String

    public init(job: JobRecord, reason: String) {
        self.job = job
        self.reason = reason
    }
}

extension DatabaseError {
    /// `error` as a `DatabaseError`; anything else a store threw (a store that is not PostgreSQL)
    /// becomes one of kind `protocolViolation`, whose meaning is `unexpected`.
    static func from(_ error: any Error) -> DatabaseError {
        error as? DatabaseError ?? DatabaseError(kind: .protocolViolation, message: "\(error)")
    }

    /// True when retrying the same statement later can succeed (`transient`, `readOnly`).
    var isWorthRetrying: Bool { meaning == .transient || meaning == .readOnly }
}
