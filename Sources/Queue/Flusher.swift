import Postgres
import Synchronization

/// Buffers completions and writes them in batches (by size or age), lease-guarded, on its own
/// connection. A batch that fails on a database error is retried with backoff; if the database
/// stays away past `giveUpSeconds`, the batch is dropped: its leases expire and the rescuer hands
/// the items out again, so nothing is lost (execution is at-least-once, results at-most-once).
final class Flusher: Sendable {
    private struct State {
        var buffer: [Completion] = []
        var writing = 0
        var closed = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let store: any JobStore
    private let owner: String
    private let effects: [String: String?]
    private let maxItems: Int
    private let intervalMilliseconds: Int
    private let logger: Logger
    private let giveUpSeconds: Double
    private let inFlight: InFlightSet
    private let failure = Mutex<String?>(nil)

    init(store: any JobStore, owner: String, effects: [String: String?], maxItems: Int, intervalMilliseconds: Int,
         giveUpSeconds: Double = 120, inFlight: InFlightSet, logger: Logger) {
        self.store = store
        self.owner = owner
        self.effects = effects
        self.maxItems = max(1, maxItems)
        self.intervalMilliseconds = max(1, intervalMilliseconds)
        self.giveUpSeconds = giveUpSeconds
        self.inFlight = inFlight
        self.logger = logger
    }

    func add(_ completion: Completion) {
        state.withLock { $0.buffer.append(completion) }
    }

    /// No more completions will be added; `run` returns once everything buffered is written.
    func close() {
        state.withLock { $0.closed = true }
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
            if idle { c.resume() }
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
                let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                    guard s.buffer.isEmpty && s.writing == 0 else { return [] }
                    defer { s.idleWaiters = [] }
                    return s.idleWaiters
                }
                waiters.forEach { $0.resume() }
                if closed { return }
                try? await Task.sleep(for: .milliseconds(intervalMilliseconds))
                continue
            }
            await write(batch)
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                s.writing -= batch.count
                guard s.buffer.isEmpty && s.writing == 0 else { return [] }
                defer { s.idleWaiters = [] }
                return s.idleWaiters
            }
            waiters.forEach { $0.resume() }
            if batch.count < maxItems && !closed {
                try? await Task.sleep(for: .milliseconds(intervalMilliseconds))
            }
        }
    }

    private func write(_ batch: [Completion]) async {
        for (kind, completions) in Dictionary(grouping: batch, by: \.kind) {
            await write(completions, kind: kind)
            inFlight.remove(completions.map(\.item.id))
        }
    }

    /// Writes completions of one kind. A lost connection or a serialization failure is retried
    /// with backoff (the batch is dropped after `giveUpSeconds`; leases then expire and items are
    /// rescued). Any other database error is a property of some item's data, which would fail the
    /// same way on every retry: the batch is split down to the offending completions, and each of
    /// those is recorded as failed without its effect.
    private func write(_ completions: [Completion], kind: String) async {
        var delay = 0.05
        var waited = 0.0
        while true {
            do {
                _ = try await store.complete(completions, owner: owner, effectSQL: effects[kind] ?? nil)
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
                if waited >= giveUpSeconds {
                    let message = "\(error)"
                    failure.withLock { $0 = message }
                    logger.error("completions dropped; their leases will expire and be rescued",
                                 ["items": "\(completions.count)", "error": message])
                    return
                }
                logger.warning("writing completions failed; retrying", ["error": "\(error)", "items": "\(completions.count)"])
                try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
                waited += delay
                delay = min(delay * 2, 5)
            }
        }
    }

    /// The database refused one completion (e.g. its effect would break a unique key): record the
    /// item as failed, with the SQLSTATE, and without the effect.
    private func recordRejected(_ completion: Completion, error: DatabaseError) async {
        logger.error("the database refused an item's completion; recording it as failed without its effect", [
            "item.id": "\(completion.item.id)", "db.sqlstate": error.sqlState ?? "", "error": "\(error)"])
        let failed = Completion(
            item: completion.item, kind: completion.kind, state: .failed,
            lastError: "completion refused by the database (SQLSTATE \(error.sqlState ?? "?"))",
            result: ResultRecord(outcome: "failed", httpStatus: completion.result?.httpStatus, appleError: completion.result?.appleError,
                                 detail: "{\"reason\":\"completion refused by the database\",\"sqlstate\":\"\(error.sqlState ?? "")\"}",
                                 tokenFingerprint: completion.result?.tokenFingerprint),
            audit: AuditRecord(action: "item.completion_refused"))
        do {
            _ = try await store.complete([failed], owner: owner, effectSQL: nil)
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
