import Clocks
import Foundation
import Queue
import Synchronization

/// An in-memory `JobStore` twin for unit tests: the same state machine and lease guards as the
/// PostgreSQL store, without a database, on an injected clock. Not durable; kinds' result
/// columns are kept in the result records, and effects are not applied.
public final class MemoryJobStore: JobStore {
    public struct Item: Sendable {
        public var claimed: ClaimedItem
        public var kind: String
        public var state: ItemState
        public var runAt: Date
        public var owner: String?
        public var leaseExpiresAt: Date?
        public var lastError: String?
    }

    private struct State {
        var jobs: [Int64: JobRecord] = [:]
        var priorities: [Int64: Int] = [:]
        var items: [Int64: Item] = [:]
        var results: [Int64: ResultRecord] = [:]
        var audit: [(Int64, AuditRecord)] = []
        var nextID: Int64 = 1
    }
    private let state = Mutex(State())
    private let clock: any WallClock

    /// - Parameter clock: the time leases, retries and rescues are measured on. Default `SystemClock()`.
    public init(clock: any WallClock = SystemClock()) {
        self.clock = clock
    }

    /// Adds a running job with `count` items at `priority` (`JobPriority`; default 4); returns the job id.
    @discardableResult
    public func addJob(kind: String, spec: String = "{}", count: Int, maxAttempts: Int = 5, priority: Int = 4) -> Int64 {
        state.withLock { s in
            let jobID = s.nextID
            s.nextID += 1
            s.jobs[jobID] = JobRecord(id: jobID, kind: kind, spec: spec, state: .running)
            s.priorities[jobID] = priority
            for _ in 0..<count {
                let id = s.nextID
                s.nextID += 1
                s.items[id] = Item(claimed: ClaimedItem(id: id, jobID: jobID, accountID: id, payload: nil, attempt: 0, maxAttempts: maxAttempts),
                                   kind: kind, state: .available, runAt: .distantPast)
            }
            return jobID
        }
    }

    public var items: [Item] { state.withLock { Array($0.items.values).sorted { $0.claimed.id < $1.claimed.id } } }
    public var results: [Int64: ResultRecord] { state.withLock { $0.results } }
    public var auditCount: Int { state.withLock { $0.audit.count } }
    public func job(_ id: Int64) -> JobRecord? { state.withLock { $0.jobs[id] } }

    public func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem] {
        let now = clock.now
        return state.withLock { s in
            // Priority first, then fair shares among jobs of equal priority, as the PostgreSQL store.
            let running = Set(s.jobs.values.filter { $0.state == .running && kinds.contains($0.kind) }.map(\.id))
            let byJob = Dictionary(grouping: s.items.values.filter {
                $0.state == .available && $0.runAt <= now && running.contains($0.claimed.jobID)
            }, by: \.claimed.jobID)
            let shares = ClaimShares.split(byJob.map { jobID, items in
                ClaimShares.DueJob(jobID: jobID, priority: s.priorities[jobID] ?? 4, due: min(items.count, limit))
            }, batch: limit)
            let due = shares.flatMap { share in
                byJob[share.jobID, default: []].sorted { ($0.runAt, $0.claimed.id) < ($1.runAt, $1.claimed.id) }.prefix(share.take)
            }
            return due.map { item in
                var updated = item
                let c = item.claimed
                updated.claimed = ClaimedItem(id: c.id, jobID: c.jobID, accountID: c.accountID, payload: c.payload,
                                              attempt: c.attempt + 1, maxAttempts: c.maxAttempts,
                                              firstAttemptAt: c.firstAttemptAt ?? now, priority: s.priorities[c.jobID] ?? 4)
                updated.state = .running
                updated.owner = owner
                updated.leaseExpiresAt = now.addingTimeInterval(lease.seconds)
                s.items[c.id] = updated
                return updated.claimed
            }
        }
    }

    public func jobs(ids: [Int64]) async throws -> [JobRecord] {
        state.withLock { s in ids.compactMap { s.jobs[$0] } }
    }

    public func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int] {
        let now = clock.now
        return state.withLock { s in
            var written: [Int64: Int] = [:]
            for c in completions {
                guard var item = s.items[c.item.id], item.state == .running, item.owner == owner,
                      item.claimed.attempt == c.item.attempt else { continue }
                item.state = c.state
                item.owner = nil
                item.leaseExpiresAt = nil
                item.lastError = c.lastError ?? item.lastError
                if c.uncharged {
                    let x = item.claimed
                    item.claimed = ClaimedItem(id: x.id, jobID: x.jobID, accountID: x.accountID, payload: x.payload,
                                               attempt: x.attempt - 1, maxAttempts: x.maxAttempts,
                                               firstAttemptAt: x.attempt <= 1 ? nil : x.firstAttemptAt, priority: x.priority)
                }
                if c.state == .available { item.runAt = now.addingTimeInterval(c.delay.seconds) }
                s.items[c.item.id] = item
                if c.state.isTerminal {
                    if let result = c.result, s.results[c.item.id] == nil { s.results[c.item.id] = result }
                    if let audit = c.audit { s.audit.append((c.item.id, audit)) }
                }
                written[c.item.id] = c.item.attempt
            }
            return written
        }
    }

    public func extendLeases(owner: String, itemIDs: [Int64], lease: Duration) async throws -> Int {
        let now = clock.now
        return state.withLock { s in
            var n = 0
            for id in itemIDs where s.items[id]?.state == .running && s.items[id]?.owner == owner {
                s.items[id]?.leaseExpiresAt = now.addingTimeInterval(lease.seconds)
                n += 1
            }
            return n
        }
    }

    public func rescueExpired(limit: Int, sparing: String?, retryBudget: Duration) async throws -> RescueReport {
        let now = clock.now
        return state.withLock { s in
            var report = RescueReport(retried: 0, discarded: 0)
            for (id, item) in s.items where item.state == .running && (item.leaseExpiresAt ?? .distantFuture) < now
                && (sparing == nil || item.owner != sparing) {
                var moved = item
                moved.owner = nil
                moved.leaseExpiresAt = nil
                moved.lastError = "lease expired"
                let first = item.claimed.firstAttemptAt ?? .distantPast
                if item.claimed.attempt >= item.claimed.maxAttempts && now.timeIntervalSince(first) >= retryBudget.seconds {
                    moved.state = .discarded
                    s.results[id] = s.results[id] ?? ResultRecord(outcome: .discarded)
                    report.discarded += 1
                } else {
                    moved.state = .available
                    moved.runAt = now
                    report.retried += 1
                }
                s.items[id] = moved
            }
            return report
        }
    }

    /// Sets a paused job running again (what `siwa-jobs job resume` does).
    public func resumeJob(_ id: Int64) {
        state.withLock { s in
            guard let job = s.jobs[id], job.state == .paused else { return }
            s.jobs[id] = JobRecord(id: id, kind: job.kind, spec: job.spec, state: .running)
        }
    }

    public func pauseJob(id: Int64, reason: String) async throws -> Bool {
        state.withLock { s in
            guard let job = s.jobs[id], job.state == .running else { return false }
            s.jobs[id] = JobRecord(id: id, kind: job.kind, spec: job.spec, state: .paused)
            return true
        }
    }

    public func completeFinishedJobs() async throws -> [Int64] {
        state.withLock { s in
            var done: [Int64] = []
            for job in s.jobs.values where job.state == .running {
                let open = s.items.values.contains { $0.claimed.jobID == job.id && ($0.state == .available || $0.state == .running) }
                if !open {
                    s.jobs[job.id] = JobRecord(id: job.id, kind: job.kind, spec: job.spec, state: .completed)
                    done.append(job.id)
                }
            }
            return done
        }
    }

    public func pausedJobs(kinds: [String]) async throws -> [Int64: String] {
        state.withLock { s in
            Dictionary(uniqueKeysWithValues: s.jobs.values.filter { $0.state == .paused && kinds.contains($0.kind) }
                .map { ($0.id, "paused") })
        }
    }

    public func backlog(kinds: [String]) async throws -> QueueBacklog {
        let now = clock.now
        return state.withLock { s in
            let live = Set(s.jobs.values.filter { $0.state == .running && kinds.contains($0.kind) }.map(\.id))
            let mine = s.items.values.filter { live.contains($0.claimed.jobID) }
            let later = mine.filter { $0.state == .available && $0.runAt > now }
            return QueueBacklog(
                dueNow: mine.filter { $0.state == .available && $0.runAt <= now }.count,
                running: mine.filter { $0.state == .running }.count,
                nextRunAt: later.map(\.runAt).min(), scheduled: later.count)
        }
    }

    public func openJobs(kinds: [String]) async throws -> [JobRecord] {
        state.withLock { s in
            s.jobs.values.filter { job in
                job.state == .running && kinds.contains(job.kind)
                    && s.items.values.contains { $0.claimed.jobID == job.id && ($0.state == .available || $0.state == .running) }
            }.sorted { $0.id < $1.id }
        }
    }
}
