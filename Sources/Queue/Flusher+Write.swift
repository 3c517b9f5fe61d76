import Foundation
import Postgres

extension Flusher {
    /// Writes completions of one kind with its `writes`, deciding by the failure's meaning
    /// (`DatabaseError.meaning`, never raw SQLSTATEs):
    /// - `badData` (a constraint or data exception): a property of some item's data, which would
    ///   fail the same way on every retry: the batch is split down to the offending completions,
    ///   and each of those is recorded as failed without its effect (`recordRejected`), unless it
    ///   is a kept completion whose result an earlier try already wrote (`keptResultExists`);
    /// - `transient` (connection lost, statement or lock timeout, serialization failure,
    ///   deadlock) and `readOnly` (a standby, a failover): the batch is kept and retried with
    ///   backoff (50 ms doubling to 5 s) until it is written; no item is failed. Only once the
    ///   worker stopped (`closeGrace` after `close()`, or at once when the run is cancelled) is
    ///   the rest left unwritten: leases expire and the items are redone later;
    /// - anything else (`misconfigured`, `permission`, `schemaMissing`, `unexpected`): the run
    ///   stops with the error (`fatalFailure`), and the batch is left unwritten.
    /// - Parameter rejected: the completions record an earlier refusal; a second refusal is logged.
    func write(_ completions: [Completion], writes: KindWrites, rejected: Bool = false) async {
        var delay = Duration.milliseconds(50)
        var failingSince: Date?
        var retries = 0
        while true {
            let failure: DatabaseError
            do {
                let written = try await store.complete(completions, owner: owner, writes: writes)
                outcome.withLock { $0.retrying = nil }
                accept(completions, written: written)
                if let failingSince {
                    logger.info("completions written once the database took them again", [
                        "items": "\(completions.count)", "retries": "\(retries)",
                        "waited_s": String(format: "%.1f", clock.now.timeIntervalSince(failingSince))])
                }
                return
            } catch {
                failure = DatabaseError.from(error)
            }
            switch failure.meaning {
            case .badData:
                if completions.count > 1 {
                    let middle = completions.count / 2
                    await write(Array(completions[..<middle]), writes: writes, rejected: rejected)
                    await write(Array(completions[middle...]), writes: writes, rejected: rejected)
                } else if let only = completions.first {
                    if failure.isUniqueViolation, (try? await store.keptResultExists(only, writes: writes)) == true {
                        // An earlier try of its statement wrote it; its answer was lost.
                        accept([only], written: [only.item.id: only.item.attempt])
                    } else if rejected {
                        logger.error("recording a refused completion was refused too", ["item.id": "\(only.item.id)", "error": "\(failure)"])
                        leave([only], failure)
                    } else {
                        await recordRejected(only, error: failure, writes: writes)
                    }
                }
                return
            case .transient, .readOnly:
                if mustGiveUp {
                    leave(completions, failure)
                    return
                }
                let since = failingSince ?? clock.now
                failingSince = since
                retries += 1
                let count = retries
                outcome.withLock { $0.retrying = (failure, count) }
                logger.warning(failure.meaning == .readOnly
                               ? "writing completions failed: the database is read-only (a standby, or a failover in progress?); keeping them and retrying"
                               : "writing completions failed; keeping them and retrying", [
                    "error": "\(failure)", "db.sqlstate": failure.sqlState ?? "", "items": "\(completions.count)",
                    "retries": "\(retries)", "waited_s": String(format: "%.1f", clock.now.timeIntervalSince(since))])
                await clock.sleep(for: delay, unless: abort.wait)
                delay = min(delay * 2, .seconds(5))
            case .misconfigured, .permission, .schemaMissing, .unexpected:
                stop(failure)
                leave(completions, failure)
                return
            }
        }
    }

    /// Counts what the statement wrote (by item and attempt); a completion it did not write lost
    /// its lease meanwhile.
    private func accept(_ completions: [Completion], written: [Int64: Int]) {
        let now = clock.now
        let superseded = outcome.withLock { o -> Int in
            var lost = 0
            for c in completions {
                if written[c.item.id] == c.item.attempt {
                    o.accepted[c.tally, default: 0] += 1
                    o.acceptedByKind[c.kind, default: [:]][c.tally, default: 0] += 1
                    if c.tally == .succeeded { o.lastSuccess[c.kind] = now }
                } else {
                    lost += 1
                }
            }
            o.superseded += lost
            return lost
        }
        if superseded > 0 {
            logger.warning("completions not applied: those items' leases had passed to another worker", ["items": "\(superseded)"])
        }
    }

    /// Completions given up on: their leases expire and the items are redone by a later run.
    private func leave(_ completions: [Completion], _ failure: DatabaseError) {
        outcome.withLock { $0.unwritten += completions.count }
        logger.error("completions left unwritten: their leases will expire and the items will be redone later", [
            "items": "\(completions.count)", "error": "\(failure)"])
    }

    /// Records the first failure that retrying cannot fix; the worker stops when it sees it.
    private func stop(_ failure: DatabaseError) {
        let first = outcome.withLock { o -> Bool in
            guard o.fatal == nil else { return false }
            o.fatal = failure
            return true
        }
        if first {
            logger.error("the database refused completions for a reason retrying cannot fix: stopping the run", [
                "error": "\(failure)", "db.sqlstate": failure.sqlState ?? ""])
        }
        progress.signal()
    }

    /// The database refused one completion for its data (e.g. its effect would break a unique
    /// key): record the item as failed, with the SQLSTATE, and without the effect (the kind's
    /// columns are kept).
    private func recordRejected(_ completion: Completion, error: DatabaseError, writes: KindWrites) async {
        logger.error("the database refused an item's completion; recording it as failed without its effect", [
            "item.id": "\(completion.item.id)", "db.sqlstate": error.sqlState ?? "", "error": "\(error)"])
        let failed = Completion(
            item: completion.item, kind: completion.kind, state: .failed,
            lastError: "completion refused by the database (SQLSTATE \(error.sqlState ?? "?"))",
            result: ResultRecord(outcome: .failed, httpStatus: completion.result?.httpStatus,
                                 detail: "{\"reason\":\"completion refused by the database\",\"sqlstate\":\"\(error.sqlState ?? "")\"}",
                                 kindValues: completion.result?.kindValues ?? [:]),
            audit: AuditRecord(action: "item.completion_refused"))
        await write([failed], writes: KindWrites(resultColumns: writes.resultColumns), rejected: true)
    }
}
