import Clocks
import Postgres
import Synchronization

/// Buffers completions and writes them in batches, lease-guarded, one statement per kind. When a
/// completion arrives at an idle flusher, and after a batch smaller than `maxItems`, the flusher
/// waits `interval` (on its clock) so the batch can fill, unless it is closed or someone waits for
/// it to go idle (`waitUntilIdle`), which writes at once. A batch that fails on a lost connection or a
/// serialization failure is retried with backoff; if the database stays away past `giveUpAfter`,
/// the batch is dropped: its leases expire and the rescuer hands the items out again, so nothing
/// is lost (execution is at-least-once, results at-most-once).
final class Flusher: Sendable {
    private struct State {
        var buffer: [Completion] = []
        var writing = 0
        var closed = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Signalled by `add`, `close` and `waitUntilIdle`: wakes an idle flusher.
    private let arrived = Wakeup()
    /// Signalled by `close` and `waitUntilIdle`: cuts the wait between batches short.
    private let urgent = Wakeup()
    private let store: any JobStore
    private let owner: String
    private let writes: [String: KindWrites]
    private let maxItems: Int
    private let interval: Duration
    private let giveUpAfter: Duration
    private let clock: any WallClock
    private let inFlight: InFlightSet
    private let logger: Logger
    private let failure = Mutex<String?>(nil)

    init(store: any JobStore, owner: String, writes: [String: KindWrites], maxItems: Int, interval: Duration,
         giveUpAfter: Duration = .seconds(120), clock: any WallClock, inFlight: InFlightSet, logger: Logger) {
        self.store = store
        self.owner = owner
        self.writes = writes
        self.maxItems = max(1, maxItems)
        self.interval = max(interval, .milliseconds(1))
        self.giveUpAfter = giveUpAfter
        self.clock = clock
        self.inFlight = inFlight
        self.logger = logger
    }

    func add(_ completion: Completion) {
        state.withLock { $0.buffer.append(completion) }
        arrived.signal()
    }

    /// No more completions will be added; `run` returns once everything buffered is written.
    func close() {
        state.withLock { $0.closed = true }
        urgent.signal()
        arrived.signal()
    }

    /// The last unrecoverable database failure, if batches had to be dropped.
    var lastFailure: String? { failure.withLock { $0 } }

    /// Waits until every completion added so far has been written (or dropped).
    func waitUntilIdle() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s -> Bool in
                if s.buffer.isEmpty && s.writing == 0 { return true }
                s.idleWaiters.append(c)
                return false
            }
            if idle {
                c.resume()
            } else {
                urgent.signal()
                arrived.signal()
            }
        }
    }

    func run() async {
        while true {
            let (batch, closed) = state.withLock { s -> ([Completion], Bool) in
                let n = min(s.buffer.count, maxItems * 4)
                let taken = Array(s.buffer.prefix(n))
                s.buffer.removeFirst(n)
                s.writing += taken.count
                return (taken, s.closed)
            }
            if batch.isEmpty {
                resumeIdleWaiters(written: 0)
                if closed { return }
                // Idle until something arrives, then let the batch fill for one interval.
                await arrived.wait()
                await clock.sleep(for: interval, unless: urgent.wait)
                continue
            }
            await write(batch)
            resumeIdleWaiters(written: batch.count)
            if batch.count < maxItems && !closed {
                await clock.sleep(for: interval, unless: urgent.wait)
            }
        }
    }

    private func resumeIdleWaiters(written: Int) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.writing -= written
            guard s.buffer.isEmpty && s.writing == 0 else { return [] }
            defer { s.idleWaiters = [] }
            return s.idleWaiters
        }
        waiters.forEach { $0.resume() }
    }

    private func write(_ batch: [Completion]) async {
        for (kind, completions) in Dictionary(grouping: batch, by: \.kind) {
            await write(completions, kind: kind)
            inFlight.remove(completions.map(\.item.id))
        }
    }

    /// Writes completions of one kind. A lost connection or a serialization failure is retried
    /// with backoff (the batch is dropped after `giveUpAfter`; leases then expire and items are
    /// rescued). Any other database error is a property of some item's data, which would fail the
    /// same way on every retry: the batch is split down to the offending completions, and each of
    /// those is recorded as failed without its effect.
    private func write(_ completions: [Completion], kind: String) async {
        var delay = Duration.milliseconds(50)
        var waited = Duration.zero
        while true {
            do {
                _ = try await store.complete(completions, owner: owner, writes: writes[kind] ?? .none)
                return
            } catch let error as DatabaseError where !(error.isConnectionLoss || error.isTransactionRetryable) {
                if completions.count > 1 {
                    let middle = completions.count / 2
                    await write(Array(completions[..<middle]), kind: kind)
                    await write(Array(completions[middle...]), kind: kind)
                } else if let only = completions.first {
                    await recordRejected(only, error: error)
                }
                return
            } catch {
                if waited >= giveUpAfter {
                    let message = "\(error)"
                    failure.withLock { $0 = message }
                    logger.error("completions dropped; their leases will expire and be rescued",
                                 ["items": "\(completions.count)", "error": message])
                    return
                }
                logger.warning("writing completions failed; retrying", ["error": "\(error)", "items": "\(completions.count)"])
                try? await clock.sleep(for: delay)
                waited += delay
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// The database refused one completion (e.g. its effect would break a unique key): record the
    /// item as failed, with the SQLSTATE, and without the effect (the kind's columns are kept).
    private func recordRejected(_ completion: Completion, error: DatabaseError) async {
        logger.error("the database refused an item's completion; recording it as failed without its effect", [
            "item.id": "\(completion.item.id)", "db.sqlstate": error.sqlState ?? "", "error": "\(error)"])
        let failed = Completion(
            item: completion.item, kind: completion.kind, state: .failed,
            lastError: "completion refused by the database (SQLSTATE \(error.sqlState ?? "?"))",
            result: ResultRecord(outcome: .failed, httpStatus: completion.result?.httpStatus,
                                 detail: "{\"reason\":\"completion refused by the database\",\"sqlstate\":\"\(error.sqlState ?? "")\"}",
                                 kindValues: completion.result?.kindValues ?? [:]),
            audit: AuditRecord(action: "item.completion_refused"))
        let columnsOnly = KindWrites(resultColumns: writes[completion.kind]?.resultColumns ?? [])
        do {
            _ = try await store.complete([failed], owner: owner, writes: columnsOnly)
        } catch {
            logger.error("recording the refused completion failed; its lease will expire and be rescued", ["error": "\(error)"])
        }
    }
}

/// Ids of items this worker holds a lease on, for heartbeats.
final class InFlightSet: Sendable {
    private let ids = Mutex(Set<Int64>())
    func insert(_ new: [Int64]) { ids.withLock { $0.formUnion(new) } }
    func remove(_ old: [Int64]) { ids.withLock { $0.subtract(old) } }
    var snapshot: [Int64] { ids.withLock { Array($0) } }
}
