import Clocks
import Foundation
import Lifecycle
import Postgres
import Synchronization

/// Buffers completions and writes them in batches, lease-guarded, one statement per kind. When a
/// completion arrives at an idle flusher, and after a batch smaller than `maxItems`, the flusher
/// waits `interval` (on its clock) so the batch can fill, unless it is closed, hurried
/// (backpressure) or someone waits for it to go idle (`waitUntilIdle`), which writes at once.
/// Up to `parallelWrites` statements run at once, each of at most `maxItems` completions. Bulk
/// completions alone (`JobPriority.bulk` and less urgent) are held until the oldest has waited
/// `bulkInterval`, unless the batch is full or the flusher is hurried, closed or given an urgent one.
/// A job's first `promptFirst` completions in this worker count as urgent whatever its priority, so
/// what judges a job's first results (the safety stop's window) sees them as they come.
///
/// What a failed batch does depends on the failure's `DatabaseError.meaning` (see
/// `Flusher+Write.swift`): only `badData` splits a batch and fails an item; `transient` and
/// `readOnly` keep the batch and retry it with backoff for as long as the worker runs (the
/// worker's backpressure bounds how much waits meanwhile); anything else stops the run. Counts
/// in the closing report come from what the statements wrote (`accepted`).
final class Flusher: Sendable {
    struct State {
        var buffer: [Completion] = []
        var writing = 0
        /// Statements being written now (at most `parallelWrites`).
        var activeWrites = 0
        var hurried = false   // `hurry()` was called since the last batch was taken
        /// When the oldest completion in `buffer` arrived (nil while it is empty).
        var oldestAt: Date?
        /// Items whose completions in `buffer` are written without a hold: of jobs more urgent
        /// than `JobPriority.bulk`, or among their job's first `promptFirst` here.
        var urgentIDs: Set<Int64> = []
        /// Completions added so far per job, counted up to `promptFirst` (`Flusher+Prompt.swift`).
        var addedPerJob: [Int64: Int] = [:]
        /// The loop is holding bulk completions: an urgent one arriving cuts the hold short.
        var holding = false
        var closed = false
        var closedAt: Date?
        var nextWaiter = 0
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var peak = 0
    }

    /// What the database accepted, and what it did not.
    struct Outcome {
        var accepted: [CompletionTally: Int] = [:]
        /// `accepted` by kind, for metrics.
        var acceptedByKind: [String: [CompletionTally: Int]] = [:]
        /// When a succeeded completion of each kind last committed, for metrics.
        var lastSuccess: [String: Date] = [:]
        var unwritten = 0
        var superseded = 0
        var fatal: DatabaseError?
        /// The failure a batch is being retried for now, and how many retries so far; nil once written.
        var retrying: (error: DatabaseError, retries: Int)?
    }

    let state = Mutex(State())
    let outcome = Mutex(Outcome())
    /// Signalled by `add`, `close` and `waitUntilIdle`: wakes an idle flusher.
    let arrived = Wakeup()
    /// Signalled by `close`, `hurry` and `waitUntilIdle`: cuts the wait between batches short.
    let urgent = Wakeup()
    /// Signalled when a statement ends, when the buffer reaches a full batch, and by `hurry` and
    /// `close`: a waiting batch may start beside the one being written.
    let writeDone = Wakeup()
    let store: any JobStore
    let owner: String
    let writes: [String: KindWrites]
    let maxItems: Int
    let interval: Duration
    /// How long bulk completions alone may be held (see the type's comment)…
    let bulkInterval: Duration
    /// …and how many at most: the worker's backpressure bound counts held completions, so a hold
    /// stops well before it (the worker passes half of what the bound leaves beside its slots).
    let holdLimit: Int
    /// How many of each job's first completions are written without a hold (see the type's comment).
    let promptFirst: Int
    /// After `close()`, how long transient failures are still retried before the rest is left.
    let closeGrace: Duration
    let clock: any WallClock
    let inFlight: InFlightSet
    let logger: Logger
    /// Signalled after every batch: the worker's loop re-checks backpressure and fatal failures.
    let progress: Wakeup
    /// Opened when the worker's run is cancelled: retrying stops at once.
    let abort: Latch

    init(store: any JobStore, owner: String, writes: [String: KindWrites], maxItems: Int, interval: Duration,
         bulkInterval: Duration = .zero, holdLimit: Int = .max, promptFirst: Int = Flusher.defaultPromptFirst,
         closeGrace: Duration, clock: any WallClock, inFlight: InFlightSet, logger: Logger, progress: Wakeup, abort: Latch) {
        self.store = store
        self.owner = owner
        self.writes = writes
        self.maxItems = max(1, maxItems)
        self.interval = max(interval, .milliseconds(1))
        self.bulkInterval = bulkInterval
        self.holdLimit = max(1, min(holdLimit, maxItems))
        self.promptFirst = max(0, promptFirst)
        self.closeGrace = closeGrace
        self.clock = clock
        self.inFlight = inFlight
        self.logger = logger
        self.progress = progress
        self.abort = abort
    }

    func add(_ completion: Completion) {
        let (full, cutHold) = state.withLock { s -> (Bool, Bool) in
            if s.buffer.isEmpty { s.oldestAt = clock.now }
            s.buffer.append(completion)
            s.peak = max(s.peak, s.buffer.count + s.writing)
            let urgentItem = Self.isUrgent(completion) || s.isAmongFirst(of: completion.item.jobID, limit: promptFirst)
            if urgentItem { s.urgentIDs.insert(completion.item.id) }
            return (s.buffer.count == maxItems && s.activeWrites > 0, s.holding && (urgentItem || s.buffer.count >= holdLimit))
        }
        arrived.signal()
        if full { writeDone.signal() }
        if cutHold { urgent.signal() }
    }

    /// No more completions will be added; `run` returns once everything buffered is written, or
    /// left unwritten after `closeGrace` of failures (or at once when `abort` opens).
    func close() {
        let now = clock.now
        state.withLock { s in
            s.closed = true
            s.closedAt = s.closedAt ?? now
        }
        urgent.signal()
        arrived.signal()
        writeDone.signal()
    }

    /// Write what is buffered now instead of waiting for the batch to fill (backpressure).
    func hurry() {
        state.withLock { $0.hurried = true }
        urgent.signal()
        arrived.signal()
        writeDone.signal()
    }

    /// Completions not yet committed: buffered, or in a statement being written or retried.
    var unflushed: Int { state.withLock { $0.buffer.count + $0.writing } }

    /// The most completions held at once.
    var peakUnflushed: Int { state.withLock { $0.peak } }

    /// The failure a batch has been retried for at least `stuckAfter` times in a row (the database
    /// read-only or unreachable for writes), if one is being retried now: a drain ends with it.
    var stuckFailure: DatabaseError? {
        outcome.withLock { o in o.retrying.flatMap { $0.retries >= Self.stuckAfter ? $0.error : nil } }
    }

    /// Retries of one batch after which a drain stops waiting for the database (50 ms doubling:
    /// about 1.5 s).
    static let stuckAfter = 5

    /// The first failure that stopped the run (a meaning retrying cannot fix), if any.
    var fatalFailure: DatabaseError? { outcome.withLock { $0.fatal } }

    /// Counts of what the database accepted, and of completions left unwritten or superseded.
    var result: Outcome { outcome.withLock { $0 } }

    /// Waits until every completion added so far has been written (or left), or the calling task
    /// is cancelled.
    func waitUntilIdle() async {
        let id = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        hurry()
        await waitCancellably { c in
            state.withLock { s -> Bool in
                if (s.buffer.isEmpty && s.writing == 0) || Task.isCancelled { return true }
                s.idleWaiters[id] = c
                return false
            }
        } unpark: {
            self.state.withLock { $0.idleWaiters.removeValue(forKey: id) }
        }
    }

    /// Statements written at once. While one batch is written the next fills; once full (or
    /// hurried, or closed) it is written beside the first on a second pool connection, so the
    /// writes keep pace with the claims. A partial batch still waits for the write before it.
    static let parallelWrites = 2

    /// What the loop does next.
    private enum Step {
        case write([Completion], closed: Bool)
        /// Every write slot is busy, or the flusher is closed with writes still running.
        case awaitWrite
        /// Nothing buffered; `busy` writes still running.
        case idle(closed: Bool, busy: Int)
        /// Only bulk completions, a partial batch: hold them this much longer.
        case hold(Duration)
    }

    func run() async {
        await withDiscardingTaskGroup { group in
            while true {
                switch nextStep() {
                case .write(let batch, let closed):
                    group.addTask { [self] in
                        await write(batch)
                        finished(batch.count)
                    }
                    if batch.count < maxItems && !closed {
                        await clock.sleep(for: interval, unless: urgent.wait)
                    }
                case .awaitWrite:
                    await writeDone.wait()
                case .hold(let duration):
                    await clock.sleep(for: duration, unless: urgent.wait)
                case .idle(let closed, let busy):
                    if busy == 0 {
                        resumeIdleWaiters()
                        if closed { return }
                    } else if closed {
                        await writeDone.wait()
                        continue
                    }
                    // Idle until something arrives (or a write ends), then let the batch fill for one interval.
                    await arrived.wait()
                    await clock.sleep(for: interval, unless: urgent.wait)
                }
            }
        }
    }

    private func nextStep() -> Step {
        let now = clock.now
        return state.withLock { s -> Step in
            s.holding = false
            if s.buffer.isEmpty {
                return .idle(closed: s.closed, busy: s.activeWrites)
            }
            guard s.activeWrites < Self.parallelWrites,
                  s.activeWrites == 0 || s.buffer.count >= maxItems || s.closed || s.hurried else { return .awaitWrite }
            if bulkInterval > interval, !s.closed, !s.hurried, s.urgentIDs.isEmpty, s.buffer.count < holdLimit,
               let oldest = s.oldestAt {
                let left = bulkInterval.seconds - now.timeIntervalSince(oldest)
                if left > 0.001 {
                    s.holding = true
                    return .hold(.seconds(fractional: left))
                }
            }
            s.hurried = false
            let n = min(s.buffer.count, maxItems)
            let taken = Array(s.buffer.prefix(n))
            s.buffer.removeFirst(n)
            s.writing += n
            s.activeWrites += 1
            s.oldestAt = s.buffer.isEmpty ? nil : now
            for c in taken { s.urgentIDs.remove(c.item.id) }
            return .write(taken, closed: s.closed)
        }
    }

    /// A completion of a job more urgent than `JobPriority.bulk` (a sign-in, a notification).
    private static func isUrgent(_ c: Completion) -> Bool { c.item.priority < JobPriority.bulk }

    /// A batch of `count` was written (or left): frees its slot and wakes whoever waits for it.
    private func finished(_ count: Int) {
        state.withLock { s in
            s.writing -= count
            s.activeWrites -= 1
        }
        resumeIdleWaiters()
        progress.signal()
        writeDone.signal()
        arrived.signal()
    }

    private func resumeIdleWaiters() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard s.buffer.isEmpty && s.writing == 0 else { return [] }
            defer { s.idleWaiters = [:] }
            return Array(s.idleWaiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    private func write(_ batch: [Completion]) async {
        for (kind, completions) in Dictionary(grouping: batch, by: \.kind) {
            await write(completions, writes: writes[kind] ?? .none)
            inFlight.remove(completions.map(\.item.id))
        }
    }

    /// True once retrying must stop: the run was cancelled, or the flusher was closed longer
    /// than `closeGrace` ago.
    var mustGiveUp: Bool {
        if abort.isOpen { return true }
        guard let closedAt = state.withLock({ $0.closedAt }) else { return false }
        return clock.now.timeIntervalSince(closedAt) >= closeGrace.seconds
    }
}
