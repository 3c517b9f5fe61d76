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
        /// The urgent claim beside the regular one (`mainLoop`).
        var urgent = false
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
        // Jobs are prepared concurrently (each its own connection), so an urgent item in a mixed
        // claim waits for the slowest preparation, not for all of them in turn.
        let byJob = Dictionary(grouping: claimed, by: \.jobID)
        let prepared: [ClaimBatch]
        if byJob.count == 1, let (jobID, items) = byJob.first {
            prepared = [await prepare(items, jobID: jobID, job: jobs[jobID])]
        } else {
            prepared = await withTaskGroup(of: ClaimBatch.self) { group -> [ClaimBatch] in
                for (jobID, items) in byJob {
                    group.addTask { [self] in await prepare(items, jobID: jobID, job: jobs[jobID]) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        for part in prepared {
            batch.ready += part.ready
            batch.unprepared += part.unprepared
        }
        return batch
    }

    /// One job's claimed items made ready by its kind's `prepare`, or unprepared with the reason.
    private func prepare(_ items: [ClaimedItem], jobID: Int64, job: JobRecord?) async -> ClaimBatch {
        var part = ClaimBatch(requested: items.count)
        guard let job, let handler = handlers[job.kind] else {
            part.unprepared = items.map { ($0, job?.kind ?? "", "job not loaded") }
            return part
        }
        do {
            let operations = try await handler.prepare(items, of: job)
            for (item, operation) in zip(items, operations) {
                part.ready.append(ReadyItem(item: item, kind: job.kind, operation: operation))
            }
            if operations.count < items.count {
                logger.error("a kind prepared fewer operations than items; releasing the rest", [
                    "job.id": "\(jobID)", "items": "\(items.count)", "operations": "\(operations.count)"])
                part.unprepared += items[operations.count...].map { ($0, job.kind, "not prepared") }
            }
        } catch {
            logger.error("preparing items failed; releasing them", ["job.id": "\(jobID)", "error": "\(error)"])
            part.unprepared = items.map { ($0, job.kind, "prepare failed") }
        }
        return part
    }

    /// Items claimed after a NOTIFY even when the ready buffer is full (an urgent item among them
    /// goes ahead of the buffer).
    static let noticedClaim = 16

    /// How many items to hold ready beyond the `concurrency` running (`prefetch`), and how far the
    /// buffer must run down before the next claim (`threshold`: the smallest claim but one at the
    /// start, an urgent one, or the last of a job). Claims of C items, at least 256 from C = 64 on,
    /// so the database sees few, large claims instead of one per handful of finished items: a
    /// claim costs about 1.1 ms whatever its size plus 19 µs per item (PostgreSQL 15, 2 cores), so
    /// 64-item claims spent half their time on the fixed part, and with it the job choice and the
    /// token load that go with each claim (at C = 64, 128-item claims cost about 6% more database
    /// CPU per item than 256-item ones). The buffer is twice the claim, and
    /// the claim at most half the buffer, so a claim lands before it runs dry. Both are capped by
    /// `claimBatch`.
    static func claimSizes(concurrency: Int, claimBatch: Int) -> (prefetch: Int, threshold: Int) {
        let wanted = max(1, min(claimBatch, concurrency >= 64 ? max(concurrency, 256) : concurrency))
        let prefetch = max(1, min(claimBatch, 2 * wanted))
        return (prefetch, min(wanted, max(1, prefetch / 2)))
    }

    /// The ready buffer with newly claimed items joined by priority: each goes behind the items of
    /// its own or a more urgent priority and ahead of less urgent ones, so an urgent item claimed
    /// while the buffer holds bulk work starts at the next free slot. Order within a priority is
    /// kept (oldest claim first).
    static func merged(_ ready: [ReadyItem], _ claimed: [ReadyItem]) -> [ReadyItem] {
        guard !claimed.isEmpty else { return ready }
        let incoming = claimed.enumerated().sorted { ($0.element.item.priority, $0.offset) < ($1.element.item.priority, $1.offset) }
            .map(\.element)
        guard let last = ready.last, last.item.priority > incoming[0].item.priority else { return ready + incoming }
        var result: [ReadyItem] = []
        result.reserveCapacity(ready.count + incoming.count)
        var i = 0, j = 0
        while i < ready.count || j < incoming.count {
            if j == incoming.count || (i < ready.count && ready[i].item.priority <= incoming[j].item.priority) {
                result.append(ready[i]); i += 1
            } else {
                result.append(incoming[j]); j += 1
            }
        }
        return result
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
