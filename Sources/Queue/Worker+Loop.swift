import Clocks
import Foundation

extension Worker {
    enum ChildResult: Sendable {
        case item(ClaimedItem, kind: String, ItemOutcome)
        /// A claim round trip finished (claim, job lookup, handler preparation).
        case claimed(ClaimBatch)
        /// The grace period after a stop request ran out.
        case graceExpired
        /// The grace watcher was cancelled (the loop ended first).
        case watcherEnded
    }

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
        var error: String?
    }

    /// Runs at most `concurrency` items in a task group. Claims run as a child task of the same
    /// group, ahead of need into a small local buffer, so the loop never waits on the database
    /// while items finish and a finished item's slot is refilled at once. Outcomes become
    /// completions for the flusher.
    func mainLoop() async -> WorkerReport {
        var report = WorkerReport()
        let kinds = handlers.keys.sorted()
        let concurrency = max(1, configuration.concurrency)
        // Items held (running + ready) aim at concurrency + prefetch; claims are batched by claimThreshold.
        let prefetch = max(1, min(configuration.claimBatch, concurrency / 2))
        let claimThreshold = max(1, min(configuration.claimBatch, concurrency / 4))
        var databaseErrors = 0

        await withTaskGroup(of: ChildResult.self) { group in
            var inflight = 0
            var ready: [ReadyItem] = []
            var claimInFlight = false
            var wantClaim = true
            var graceExpired = false
            var stopLogged = false
            // The grace watcher: once a stop is requested, in-flight items get the grace period,
            // then the group is cancelled. It ends at once when the loop cancels the group.
            // A cancelled `run()` opens the abort latch, which ends the grace period at once.
            let grace = configuration.shutdownGrace
            group.addTask { [stopSignal, abortSignal, clock] in
                await stopSignal.wait()
                if Task.isCancelled { return .watcherEnded }
                await clock.sleep(for: grace, unless: abortSignal.wait)
                return Task.isCancelled ? .watcherEnded : .graceExpired
            }
            loop: while true {
                if isStopping {
                    ready.forEach { release($0.item, kind: $0.kind, reason: "released on shutdown", report: &report) }
                    ready.removeAll()
                    if inflight == 0 && !claimInFlight { break loop }
                    if !stopLogged {
                        stopLogged = true
                        logger.info("stopping: no more claims; waiting for in-flight items", [
                            "items": "\(inflight)", "grace_s": "\(grace.seconds)"])
                    }
                } else {
                    if wakeup.consume() { wantClaim = true }
                    let deficit = concurrency + prefetch - inflight - ready.count
                    if !claimInFlight && wantClaim && !upstreamCoolingDown
                        && (deficit >= claimThreshold || (inflight == 0 && ready.isEmpty)) {
                        claimInFlight = true
                        let limit = min(deficit, configuration.claimBatch)
                        let backoff = databaseErrors == 0 ? Duration.zero : min(.seconds(5), .milliseconds(200) * databaseErrors)
                        group.addTask { [self] in .claimed(await self.claimBatch(limit: limit, kinds: kinds, backoff: backoff)) }
                    }
                    while inflight < concurrency, !ready.isEmpty {
                        let next = ready.removeFirst()
                        group.addTask { [self] in
                            if Task.isCancelled || self.isPaused(next.item.jobID) {
                                return .item(next.item, kind: next.kind, .released)
                            }
                            return .item(next.item, kind: next.kind, await next.operation())
                        }
                        inflight += 1
                    }
                }
                if inflight == 0 && ready.isEmpty && !claimInFlight {
                    if isStopping { break loop }
                    // Idle: everything we wrote is visible before we look at the backlog.
                    await flusher.waitUntilIdle()
                    if let finished = try? await store.completeFinishedJobs(), !finished.isEmpty {
                        logger.info("jobs completed", ["job.ids": finished.map(String.init).joined(separator: ",")])
                        jobCache.withLock { cache in finished.forEach { cache[$0] = nil } }
                    }
                    if configuration.drain {
                        let decision = await drainDecision(kinds: kinds, report: &report)
                        if decision == .exit { break loop }
                        if decision == .claimNow { wantClaim = true; continue }
                    }
                    await wakeup.wait()
                    wantClaim = true
                    continue
                }
                guard let result = await group.next() else { break loop }
                switch result {
                case .graceExpired:
                    graceExpired = true
                    logger.warning("grace period over: cancelling in-flight items", ["items": "\(inflight)"])
                    group.cancelAll()
                case .watcherEnded:
                    break
                case let .claimed(batch):
                    claimInFlight = false
                    for entry in batch.unprepared { release(entry.item, kind: entry.kind, reason: entry.reason, report: &report) }
                    if let error = batch.error {
                        databaseErrors += 1
                        logger.error("claim failed", ["error": error, "consecutive": "\(databaseErrors)"])
                        if configuration.drain && databaseErrors >= 5 && inflight == 0 && ready.isEmpty {
                            report.databaseFailure = error
                            break loop
                        }
                        wantClaim = true
                    } else {
                        databaseErrors = 0
                        wantClaim = batch.claimed == batch.requested
                    }
                    ready += batch.ready
                case let .item(item, kind, outcome):
                    inflight -= 1
                    await record(outcome, of: item, kind: kind, cancelled: graceExpired, report: &report)
                }
            }
            group.cancelAll()
        }
        return report
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
            batch.error = "\(error)"
            return batch
        }
        batch.claimed = claimed.count
        guard !claimed.isEmpty else { return batch }
        inFlight.insert(claimed.map(\.id))
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

    func release(_ item: ClaimedItem, kind: String, reason: String, report: inout WorkerReport, counted: Bool = true) {
        if counted { report.released += 1 }
        flusher.add(Completion(item: item, kind: kind, state: .available, uncharged: true, lastError: reason))
    }
}
