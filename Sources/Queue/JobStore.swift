import Foundation

/// What `--drain` needs to know to decide whether to keep going.
public struct QueueBacklog: Sendable, Equatable {
    /// Items of running jobs that are available and due now.
    public var dueNow: Int
    /// Items leased by any worker (in flight elsewhere, or held by a dead worker until rescued).
    public var running: Int
    /// The earliest future `run_at` of an available item (a scheduled retry), if any.
    public var nextRunAt: Date?
    /// Available items due later (scheduled retries).
    public var scheduled: Int

    public init(dueNow: Int, running: Int, nextRunAt: Date?, scheduled: Int = 0) {
        self.dueNow = dueNow
        self.running = running
        self.nextRunAt = nextRunAt
        self.scheduled = scheduled
    }

    /// Items not finished: due, leased and scheduled.
    public var unfinished: Int { dueNow + running + scheduled }
}

/// What a rescue pass did.
public struct RescueReport: Sendable, Equatable {
    public var retried: Int
    public var discarded: Int
    public init(retried: Int, discarded: Int) {
        self.retried = retried
        self.discarded = discarded
    }
}

/// The durable queue, as the worker uses it. `PostgresJobStore` is the real one.
public protocol JobStore: Sendable {
    /// Leases up to `limit` due items of running jobs of the given kinds for `lease`
    /// (`FOR UPDATE SKIP LOCKED`), incrementing each item's attempt: items of more urgent jobs
    /// first (`JobPriority`), the batch shared fairly among jobs of equal priority (`ClaimShares`),
    /// each job's oldest due items (run_at, id) first. Returned most urgent first.
    func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem]
    /// Jobs by id (for specs and kinds).
    func jobs(ids: [Int64]) async throws -> [JobRecord]
    /// Writes completions of one kind in one statement, with the kind's own result columns and
    /// effect (`writes`), touching only items `owner` still leases at the claimed attempt.
    /// Returns the items written (committed), by id, each with the attempt whose completion was
    /// written; the others were not `owner`'s at that attempt any more (a batch may hold a stale
    /// completion of an item beside the one of its newer attempt).
    func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int]
    /// Extends the leases `owner` holds on `itemIDs` to `lease` from now, skipping (never waiting
    /// for) singly items a completion is writing at that moment; a range lease a completion of
    /// kept items holds is waited for. Returns how many were extended.
    func extendLeases(owner: String, itemIDs: [Int64], lease: Duration) async throws -> Int
    /// Expired leases back to available, or discarded with a result row when the attempt that was
    /// running was the last and the item's first attempt is older than `retryBudget`. Leases of
    /// `sparing` (the calling worker, which is alive and renewing them) are left alone.
    func rescueExpired(limit: Int, sparing: String?, retryBudget: Duration) async throws -> RescueReport
    /// Pauses a running job with a reason that says what to check. Returns false if it was not running.
    func pauseJob(id: Int64, reason: String) async throws -> Bool
    /// Marks running jobs with no unfinished items as completed. Returns their ids.
    func completeFinishedJobs() async throws -> [Int64]
    /// Paused jobs of the given kinds with their reasons.
    func pausedJobs(kinds: [String]) async throws -> [Int64: String]
    /// Due, leased and scheduled work of running jobs of the given kinds.
    func backlog(kinds: [String]) async throws -> QueueBacklog
    /// Running jobs of the given kinds that still have unfinished (available or leased) items.
    func openJobs(kinds: [String]) async throws -> [JobRecord]
    /// Running jobs of the given kinds with unfinished items that this store never claims: out of
    /// its `JobScope` (a team this worker has no credentials for). None by default.
    func outOfScopeJobs(kinds: [String]) async throws -> [JobRecord]
    /// Why `outOfScopeJobs` cannot run here.
    var outOfScopeReason: String { get }
    /// Whether `completion` kept its item's row (`KindWrites.keepsSucceededRangeItems`) and its
    /// result is already written: an earlier try of its statement committed though its answer was
    /// lost, so its second try met the result's key. False by default (a store that keeps no rows).
    func keptResultExists(_ completion: Completion, writes: KindWrites) async throws -> Bool
}

extension JobStore {
    public func outOfScopeJobs(kinds: [String]) async throws -> [JobRecord] { [] }
    public var outOfScopeReason: String { "" }
    public func keptResultExists(_ completion: Completion, writes: KindWrites) async throws -> Bool { false }

    /// Rescues every expired lease, discarding items out of attempts at once (no retry budget).
    public func rescueExpired(limit: Int) async throws -> RescueReport {
        try await rescueExpired(limit: limit, sparing: nil, retryBudget: .zero)
    }
}
