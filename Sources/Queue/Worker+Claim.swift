import Clocks
import Foundation
import Postgres

extension Worker {
    /// A claimed item whose operation is prepared and waiting for a free slot.
    struct ReadyItem: Sendable {
        let item: ClaimedItem
        let kind: String
        let operation: @Sendable () async -> ItemOutcome
    }

    /// What one claim round trip produced.
    struct ClaimBatch: Sendable {
        var requested: Int
        var claimed = 0
        var ready: [ReadyItem] = []
        /// Items that could not be prepared, with their kind and the reason; released uncharged.
        var unprepared: [(item: ClaimedItem, kind: String, reason: String)] = []
        var error: DatabaseError?
    }

    /// One claim round trip, run as a child task: claim, look up unknown jobs, prepare per job.
    /// After a failure it first waits `backoff`, so a database outage is not hammered.
    func claimBatch(limit: Int, kinds: [String], backoff: Duration) async -> ClaimBatch {
        var batch = ClaimBatch(requested: limit)
        if backoff > .zero { try? await clock.sleep(for: backoff) }
        let claimed: [ClaimedItem]
        let claimStarted = clock.now
        do {
            claimed = try await store.claim(owner: configuration.workerID, kinds: kinds, limit: limit,
                                            lease: configuration.lease)
        } catch {
            batch.error = DatabaseError.from(error)
            return batch
        }
        batch.claimed = claimed.count
        guard !claimed.isEmpty else { return batch }
        inFlight.insert(claimed.map(\.id))
        noteClaimed(claimed.map(\.id))
        forgetPausesResumedBefore(claimStarted, jobIDs: Set(claimed.map(\.jobID)))
        let jobs = await jobRecords(Set(claimed.map(\.jobID)))
        for (jobID, items) in Dictionary(grouping: claimed, by: \.jobID) {
            guard let job = jobs[jobID], let handler = handlers[job.kind] else {
                batch.unprepared += items.map { ($0, jobs[jobID]?.kind ?? "", "job not loaded") }
                continue
            }
            do {
                let operations = try await handler.prepare(items, of: job)
                for (item, operation) in zip(items, operations) {
                    batch.ready.append(ReadyItem(item: item, kind: job.kind, operation: operation))
                }
                if operations.count < items.count {
                    logger.error("a kind prepared fewer operations than items; releasing the rest", [
                        "job.id": "\(jobID)", "items": "\(items.count)", "operations": "\(operations.count)"])
                    batch.unprepared += items[operations.count...].map { ($0, job.kind, "not prepared") }
                }
            } catch {
                logger.error("preparing items failed; releasing them", ["job.id": "\(jobID)", "error": "\(error)"])
                batch.unprepared += items.map { ($0, job.kind, "prepare failed") }
            }
        }
        return batch
    }

    /// Job records by id, from the cache or the store.
    func jobRecords(_ ids: Set<Int64>) async -> [Int64: JobRecord] {
        var known = jobCache.withLock { cache in ids.reduce(into: [Int64: JobRecord]()) { $0[$1] = cache[$1] } }
        let missing = ids.filter { known[$0] == nil }
        if !missing.isEmpty, let fetched = try? await store.jobs(ids: Array(missing)) {
            jobCache.withLock { cache in for job in fetched { cache[job.id] = job } }
            for job in fetched { known[job.id] = job }
        }
        return known
    }

    /// Gives an item back uncharged (shutdown, not prepared, job paused). `counted: false` keeps
    /// it out of the report's `released` (a paused job's items).
    func release(_ item: ClaimedItem, kind: String, reason: String, counted: Bool = true) {
        flusher.add(Completion(item: item, kind: kind, state: .available, uncharged: true, lastError: reason,
                               tally: counted ? .released : .uncounted))
    }
}
