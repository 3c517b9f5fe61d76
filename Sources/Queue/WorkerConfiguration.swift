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
    /// While only bulk completions (`JobPriority.bulk` and less urgent) are buffered and fewer than
    /// `flushMaxItems`, they are held until the oldest has waited this long, so a slow stream (a
    /// rate ceiling, a low concurrency) is written in a few statements instead of one per item or
    /// two; an urgent completion, backpressure, a drain's end or a stop writes them at once.
    /// Default 500 ms (a statement of `flushMaxItems` at C=64, README "Cost per item"); at most
    /// `flushInterval` means no hold.
    public var bulkFlushInterval: Duration = .milliseconds(500)
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
    /// Calls that never reached the upstream (`ItemOutcome.unreachable`) in a row, with no call
    /// reaching it in between, after which it is taken to be down, as above. Scaled to the job
    /// so a small job stops too: 0 picks min(the threshold above, max(10, 2 × distinct items
    /// claimed so far)), e.g. 22 for an 11-item job, 128 for a large one at concurrency 64.
    public var unreachableFailureThreshold: Int
    /// A transient failure discards an item only when it has used its max attempts AND its first
    /// attempt started longer ago than this; until then it is retried with backoff (a drain
    /// leaves retries beyond `drainHorizon` for the next run). Default 1 hour; 0 discards at max
    /// attempts, as a pure count.
    public var retryBudget: Duration
    /// Backpressure: most completions waiting to be written plus items in flight. While that many
    /// are held, the worker neither claims nor starts items, so a database that cannot take
    /// writes (a lock, an outage) holds at most this many completions in memory. 0 picks
    /// max(2 × concurrency, concurrency + 1024): the room beside the C running lets bulk
    /// completions gather into statements of `flushMaxItems` (`Worker` holds them up to half of
    /// it); C + 256 had held them to 128 per statement at any C, and 2 × C to 32 at C=64.
    public var maxUnflushed: Int
    /// Kinds this process cannot run, with why (e.g. no Apple credentials configured). With
    /// `drain`, running jobs of these kinds with items left are reported (`WorkerReport.unrunnable`),
    /// which the CLI turns into exit 78. Default none.
    public var unavailableKinds: [String: String]
    /// Where the claim loop and the items run (`withTaskExecutorPreference`): the HTTP
    /// transport's loop thread, so a response resumes its item on the thread that received it.
    /// nil: the global concurrent executor.
    public var itemExecutor: (any TaskExecutor)? = nil

    public init(workerID: String, concurrency: Int = 64, claimBatch: Int = 500, lease: Duration = .seconds(30),
                pollInterval: Duration = .seconds(1), flushMaxItems: Int = 500, flushInterval: Duration = .milliseconds(20),
                shutdownGrace: Duration = .seconds(20), drain: Bool = false, drainHorizon: Duration = .seconds(120),
                backoff: BackoffPolicy = BackoffPolicy(), upstreamFailureThreshold: Int = 0,
                upstreamCoolDown: Duration = .seconds(60), unreachableFailureThreshold: Int = 0,
                retryBudget: Duration = .seconds(3600), maxUnflushed: Int = 0, unavailableKinds: [String: String] = [:]) {
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
        self.unreachableFailureThreshold = unreachableFailureThreshold
        self.retryBudget = retryBudget
        self.maxUnflushed = maxUnflushed
        self.unavailableKinds = unavailableKinds
    }

    /// The effective threshold for taking the upstream to be down.
    var effectiveUpstreamFailureThreshold: Int {
        upstreamFailureThreshold > 0 ? upstreamFailureThreshold : max(100, 2 * concurrency)
    }

    /// The effective "unreachable" threshold once `distinctClaimed` items have been claimed.
    func effectiveUnreachableThreshold(distinctClaimed: Int) -> Int {
        if unreachableFailureThreshold > 0 { return unreachableFailureThreshold }
        return min(effectiveUpstreamFailureThreshold, max(10, 2 * distinctClaimed))
    }

    /// The effective backpressure bound.
    var effectiveMaxUnflushed: Int {
        maxUnflushed > 0 ? maxUnflushed : max(2 * concurrency, concurrency + 1024)
    }
}
