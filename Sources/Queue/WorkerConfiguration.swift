/// Settings for one worker process. Built once at the edge (flags, environment); defaults here.
public struct WorkerConfiguration: Sendable {
    /// Unique id of this process, recorded as `lease_owner`. Default: host:pid:random.
    public var workerID: String
    /// Most items in flight at once (`--concurrency`). Default 64. Range 1...4096.
    public var concurrency: Int
    /// Most items claimed per round trip. Default 500.
    public var claimBatch: Int
    /// Lease length; leases are renewed every third of it while items are in flight. Default 30 s.
    public var lease: Duration
    /// Fallback poll interval, jittered ±50 %, for when NOTIFY is missed. Default 1 s.
    public var pollInterval: Duration
    /// Completions are flushed when this many are buffered… Default 500.
    public var flushMaxItems: Int
    /// …or this long after the previous, smaller, batch was written. Default 20 ms.
    public var flushInterval: Duration
    /// After SIGTERM/SIGINT, how long in-flight items get to finish before they are cancelled and
    /// released. Default 20 s.
    public var shutdownGrace: Duration
    /// Exit when nothing is due (`--drain`) instead of waiting for new jobs.
    public var drain: Bool
    /// With `drain`, retries due within this long are waited for. Default 120 s.
    public var drainHorizon: Duration
    /// Retry delays.
    public var backoff: BackoffPolicy
    /// Consecutive transient failures (no success in between) after which the upstream is taken
    /// to be down: with `drain` the run stops (`WorkerReport.upstreamFailure`) instead of burning
    /// every item's attempts; otherwise claiming pauses for `upstreamCoolDown`. 0 picks
    /// max(100, 2 × concurrency).
    public var upstreamFailureThreshold: Int
    /// How long claiming pauses after the upstream is taken to be down (long-running mode). Default 60 s.
    public var upstreamCoolDown: Duration

    public init(workerID: String, concurrency: Int = 64, claimBatch: Int = 500, lease: Duration = .seconds(30),
                pollInterval: Duration = .seconds(1), flushMaxItems: Int = 500, flushInterval: Duration = .milliseconds(20),
                shutdownGrace: Duration = .seconds(20), drain: Bool = false, drainHorizon: Duration = .seconds(120),
                backoff: BackoffPolicy = BackoffPolicy(), upstreamFailureThreshold: Int = 0,
                upstreamCoolDown: Duration = .seconds(60)) {
        self.workerID = workerID
        self.concurrency = concurrency
        self.claimBatch = claimBatch
        self.lease = lease
        self.pollInterval = pollInterval
        self.flushMaxItems = flushMaxItems
        self.flushInterval = flushInterval
        self.shutdownGrace = shutdownGrace
        self.drain = drain
        self.drainHorizon = drainHorizon
        self.backoff = backoff
        self.upstreamFailureThreshold = upstreamFailureThreshold
        self.upstreamCoolDown = upstreamCoolDown
    }

    /// The effective threshold for taking the upstream to be down.
    var effectiveUpstreamFailureThreshold: Int {
        upstreamFailureThreshold > 0 ? upstreamFailureThreshold : max(100, 2 * concurrency)
    }
}

/// What a worker run did. The CLI decides the process exit status from these facts.
public struct WorkerReport: Sendable, Equatable {
    public var succeeded = 0
    /// Permanent per-item failures.
    public var failed = 0
    /// Items discarded after their last attempt failed transiently.
    public var discarded = 0
    public var retried = 0
    public var released = 0
    /// Reasons of jobs this worker paused for configuration errors.
    public var pausedJobs: [Int64: String] = [:]
    /// Items left for a later run (scheduled beyond the drain horizon, or leased elsewhere).
    public var leftPending = 0
    /// Set when the run ended on a database failure it could not ride out.
    public var databaseFailure: String?
    /// Set when a drain stopped because the upstream (the service the kinds call) looked down.
    public var upstreamFailure: String?

    public init() {}

    /// The report as structured log fields (`worker stopped`), without failure texts.
    public var logFields: [String: String] {
        [
            "succeeded": "\(succeeded)", "failed": "\(failed)", "discarded": "\(discarded)",
            "retried": "\(retried)", "released": "\(released)", "paused_jobs": "\(pausedJobs.count)",
            "left_pending": "\(leftPending)", "database_failure": "\(databaseFailure != nil)",
            "upstream_failure": "\(upstreamFailure != nil)",
        ]
    }
}
