/// Settings for one worker process. Built once at the edge (flags, environment); defaults here.
public struct WorkerConfiguration: Sendable {
    /// Unique id of this process, recorded as `lease_owner`. Default: host:pid:random.
    public var workerID: String
    /// Most items in flight at once (`--concurrency`). Default 64. Range 1...4096.
    public var concurrency: Int
    /// Most items claimed per round trip. Default 500.
    public var claimBatch: Int
    /// Lease length in seconds; leases are renewed every third of it while items are in flight. Default 30 s.
    public var leaseSeconds: Double
    /// Fallback poll interval in seconds, jittered ±50 %, for when NOTIFY is missed. Default 1 s.
    public var pollSeconds: Double
    /// Completions are flushed when this many are buffered… Default 500.
    public var flushMaxItems: Int
    /// …or this many milliseconds after the first was buffered. Default 20 ms.
    public var flushIntervalMilliseconds: Int
    /// After SIGTERM/SIGINT, seconds in-flight items get to finish before they are cancelled and released. Default 20 s.
    public var shutdownGraceSeconds: Double
    /// Exit when nothing is due (`--drain`) instead of waiting for new jobs.
    public var drain: Bool
    /// With `drain`, retries due within this many seconds are waited for. Default 120 s.
    public var drainHorizonSeconds: Double
    /// Retry delays.
    public var backoff: BackoffPolicy

    public init(workerID: String, concurrency: Int = 64, claimBatch: Int = 500, leaseSeconds: Double = 30,
                pollSeconds: Double = 1, flushMaxItems: Int = 500, flushIntervalMilliseconds: Int = 20,
                shutdownGraceSeconds: Double = 20, drain: Bool = false, drainHorizonSeconds: Double = 120,
                backoff: BackoffPolicy = BackoffPolicy()) {
        self.workerID = workerID
        self.concurrency = concurrency
        self.claimBatch = claimBatch
        self.leaseSeconds = leaseSeconds
        self.pollSeconds = pollSeconds
        self.flushMaxItems = flushMaxItems
        self.flushIntervalMilliseconds = flushIntervalMilliseconds
        self.shutdownGraceSeconds = shutdownGraceSeconds
        self.drain = drain
        self.drainHorizonSeconds = drainHorizonSeconds
        self.backoff = backoff
    }
}

/// What a worker run did; maps onto the `work --drain` exit code.
public struct WorkerReport: Sendable, Equatable {
    public var succeeded = 0
    /// Permanent per-item failures and discarded items.
    public var failed = 0
    public var retried = 0
    public var released = 0
    /// Reasons of jobs this worker paused for configuration errors.
    public var pausedJobs: [Int64: String] = [:]
    /// Items left for a later run (scheduled beyond the drain horizon, or leased elsewhere).
    public var leftPending = 0
    /// Set when the run ended on a database failure it could not ride out.
    public var databaseFailure: String?

    public init() {}

    /// 0 all succeeded; 1 some items failed permanently; 75 temporary failure (database, work left
    /// pending); 78 configuration error (a job was paused). Follows sysexits(3).
    public var exitCode: Int32 {
        if !pausedJobs.isEmpty { return 78 }
        if databaseFailure != nil { return 75 }
        if failed > 0 { return 1 }
        if leftPending > 0 { return 75 }
        return 0
    }
}
