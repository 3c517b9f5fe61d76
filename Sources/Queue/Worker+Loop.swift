import Clocks
import Foundation
import Postgres

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

    /// The loop's own state between iterations.
    struct LoopState {
        var inflight = 0
        var ready: [ReadyItem] = []
        var claimInFlight = false
        var wantClaim = true
        var graceExpired = false
        var stopLogged = false
        var backpressured = false
        /// When the current backpressure began, and whether it has been reported as sustained.
        var backpressureSince: Date?
        var backpressureReported = false
        /// Claim failures in a row.
        var databaseErrors = 0
    }

    /// Runs at most `concurrency` items in a task group. Claims run as a child task of the same
    /// group, ahead of need into a small local buffer, so the loop never waits on the database
    /// while items finish and a finished item's slot is refilled at once; the buffer holds at most
    /// prefetch (min(claim batch, C/2)) items beyond the C running, most urgent first (`merged`),
    /// so an urgent job's items wait behind no bulk item once claimed. Outcomes become
    /// completions for the flusher.
    ///
    /// Backpressure: while completions waiting to be written plus items in flight reach
    /// `maxUnflushed` (about 2 × concurrency), nothing is claimed or started; the loop resumes as
    /// the flusher drains, so a database that cannot take writes holds a bounded number of
    /// completions in memory instead of every call the worker could make meanwhile.
    func mainLoop() async -> WorkerReport {
        var report = WorkerReport()
        let kinds = handlers.keys.sorted()
        let concurrency = max(1, configuration.concurrency)
        // Items held (running + ready) aim at concurrency + prefetch; claims are batched by claimThreshold.
        let prefetch = max(1, min(configuration.claimBatch, concurrency / 2))
        let claimThreshold = max(1, min(configuration.claimBatch, concurrency / 4))
        let bound = configuration.effectiveMaxUnflushed

        await withTaskGroup(of: ChildResult.self) { group in
            var s = LoopState()
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
                if let fatal = flusher.fatalFailure, report.databaseFailure == nil {
                    report.databaseFailure = fatal
                    shutdownGracefully()
                }
                if isStopping {
                    s.ready.forEach { release($0.item, kind: $0.kind, reason: "released on shutdown") }
                    s.ready.removeAll()
                    if s.inflight == 0 && !s.claimInFlight {
                        report.endedByStop = true
                        break loop
                    }
                    if !s.stopLogged {
                        s.stopLogged = true
                        logger.info("stopping: no more claims; waiting for in-flight items", [
                            "items": "\(s.inflight)", "grace_s": "\(grace.seconds)"])
                    }
                } else {
                    if wakeup.consume() { s.wantClaim = true }
                    noteBackpressure(&s, bound: bound)
                    let deficit = concurrency + prefetch - s.inflight - s.ready.count
                    if !s.claimInFlight && s.wantClaim && !s.backpressured && !upstreamCoolingDown
                        && (deficit >= claimThreshold || (s.inflight == 0 && s.ready.isEmpty)) {
                        s.claimInFlight = true
                        let limit = min(deficit, configuration.claimBatch)
                        let errors = s.databaseErrors
                        let backoff = errors == 0 ? Duration.zero : min(.seconds(5), .milliseconds(200) * errors)
                        group.addTask { [self] in .claimed(await self.claimBatch(limit: limit, kinds: kinds, backoff: backoff)) }
                    }
                    while s.inflight < concurrency, !s.ready.isEmpty, flusher.unflushed + s.inflight < bound {
                        let next = s.ready.removeFirst()
                        group.addTask { [self] in
                            if Task.isCancelled || self.isPaused(next.item.jobID) {
                                return .item(next.item, kind: next.kind, .released)
                            }
                            return .item(next.item, kind: next.kind, await next.operation())
                        }
                        s.inflight += 1
                    }
                }
                if s.inflight == 0 && s.ready.isEmpty && !s.claimInFlight {
                    if isStopping {
                        report.endedByStop = true
                        break loop
                    }
                    // Idle: everything we wrote is visible before we look at the backlog.
                    await waitForFlusherUnlessStopped()
                    if isStopping || flusher.fatalFailure != nil { continue }
                    if let finished = try? await store.completeFinishedJobs(), !finished.isEmpty {
                        logger.info("jobs completed", ["job.ids": finished.map(String.init).joined(separator: ",")])
                        jobCache.withLock { cache in finished.forEach { cache[$0] = nil } }
                    }
                    if configuration.drain {
                        let decision = await drainDecision(kinds: kinds, report: &report)
                        if decision == .exit { break loop }
                        if decision == .claimNow { s.wantClaim = true; continue }
                    }
                    await wakeup.wait()
                    s.wantClaim = true
                    continue
                }
                if s.inflight == 0 && !s.claimInFlight {
                    // Only claimed items wait, held back by backpressure: wait for the flusher
                    // (it signals the wake-up after every batch), a stop, or the poll tick.
                    await wakeup.wait()
                    s.wantClaim = true
                    continue
                }
                guard let result = await group.next() else { break loop }
                switch result {
                case .graceExpired:
                    s.graceExpired = true
                    logger.warning("grace period over: cancelling in-flight items", ["items": "\(s.inflight)"])
                    group.cancelAll()
                case .watcherEnded:
                    break
                case let .claimed(batch):
                    if handleClaimed(batch, state: &s, report: &report) == .stop { break loop }
                case let .item(item, kind, outcome):
                    s.inflight -= 1
                    await record(outcome, of: item, kind: kind, cancelled: s.graceExpired, report: &report)
                }
            }
            group.cancelAll()
        }
        return report
    }

    enum ClaimVerdict { case carryOn, stop }

    /// A claim round trip's result: its items join the ready buffer, unprepared ones go back. A
    /// failure is retried with backoff when retrying can help (five in a row end a drain with
    /// nothing in flight); any other meaning stops the run with the error.
    func handleClaimed(_ batch: ClaimBatch, state s: inout LoopState, report: inout WorkerReport) -> ClaimVerdict {
        s.claimInFlight = false
        for entry in batch.unprepared { release(entry.item, kind: entry.kind, reason: entry.reason) }
        s.ready = Self.merged(s.ready, batch.ready)
        guard let error = batch.error else {
            s.databaseErrors = 0
            s.wantClaim = batch.claimed == batch.requested
            return .carryOn
        }
        s.databaseErrors += 1
        logger.error("claim failed", ["error": "\(error)", "db.sqlstate": error.sqlState ?? "",
                                      "consecutive": "\(s.databaseErrors)"])
        if !error.isWorthRetrying {
            report.databaseFailure = report.databaseFailure ?? error
            shutdownGracefully()
        } else if configuration.drain && s.databaseErrors >= 5 && s.inflight == 0 && s.ready.isEmpty {
            report.databaseFailure = report.databaseFailure ?? error
            return .stop
        }
        s.wantClaim = true
        return .carryOn
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

    /// Updates the backpressure state and hurries the flusher while it holds. Brief spells are
    /// normal when the database is the slower side (debug); one that lasts 5 s (a lock, an
    /// outage) is a warning, and its end is logged.
    func noteBackpressure(_ s: inout LoopState, bound: Int) {
        let unflushed = flusher.unflushed
        let held = unflushed + s.inflight >= bound
        let fields = ["unflushed": "\(unflushed)", "in_flight": "\(s.inflight)", "bound": "\(bound)"]
        if held {
            flusher.hurry()
            let since = s.backpressureSince ?? clock.now
            s.backpressureSince = since
            if !s.backpressureReported && clock.now.timeIntervalSince(since) >= 5 {
                s.backpressureReported = true
                logger.warning("backpressure: completions have waited 5 s to be written; claiming paused", fields)
            }
        } else if s.backpressured {
            if s.backpressureReported { logger.info("backpressure over: claiming resumes", fields) }
            s.backpressureSince = nil
            s.backpressureReported = false
        }
        if held != s.backpressured {
            s.backpressured = held
            logger.debug(held ? "backpressure: claiming paused" : "backpressure over", fields)
        }
    }

    /// Waits until the flusher has written everything added so far, or a stop is requested.
    func waitForFlusherUnlessStopped() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [flusher] in await flusher.waitUntilIdle() }
            group.addTask { [stopSignal] in await stopSignal.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}
