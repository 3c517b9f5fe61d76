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
        /// A NOTIFY arrived (`Worker.wake()`), or the notice watcher was cancelled.
        case noticed
    }

    /// The loop's own state between iterations.
    struct LoopState {
        var inflight = 0
        var ready: [ReadyItem] = []
        var claimInFlight = false
        /// An urgent claim (after a NOTIFY) running beside the regular one.
        var urgentClaimInFlight = false
        var claiming: Bool { claimInFlight || urgentClaimInFlight }
        var wantClaim = true
        /// A NOTIFY arrived since the last claim began: claim at once, whatever the deficit.
        var urgentClaim = false
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
    /// a prefetch (`claimSizes`) of items beyond the C running, most urgent first (`merged`),
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
        let (prefetch, claimThreshold) = Self.claimSizes(concurrency: concurrency, claimBatch: configuration.claimBatch)
        let bound = configuration.effectiveMaxUnflushed

        await withTaskExecutorPreference(configuration.itemExecutor) {
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
            // The notice watcher: a NOTIFY ends the wait for the next child, so an urgent claim
            // need not wait for a claim still out or an item to finish. Re-armed after each.
            group.addTask { [notice] in await notice.wait(); return .noticed }
            loop: while true {
                if let fatal = flusher.fatalFailure, report.databaseFailure == nil {
                    report.databaseFailure = fatal
                    shutdownGracefully()
                }
                if isStopping {
                    s.ready.forEach { release($0.item, kind: $0.kind, reason: "released on shutdown") }
                    s.ready.removeAll()
                    if s.inflight == 0 && !s.claiming {
                        report.endedByStop = true
                        break loop
                    }
                    if !s.stopLogged {
                        s.stopLogged = true
                        logger.info("stopping: no more claims; waiting for in-flight items", [
                            "items": "\(s.inflight)", "grace_s": "\(grace.seconds)"])
                    }
                } else {
                    if s.inflight == 0 && !s.claiming && drainStuck(&report, s) {
                        s.ready.forEach { release($0.item, kind: $0.kind, reason: "released: the database takes no writes") }
                        break loop
                    }
                    if wakeup.consume() { s.wantClaim = true }
                    if noticed.exchange(false, ordering: .acquiringAndReleasing) { s.urgentClaim = true }
                    noteBackpressure(&s, bound: bound)
                    let deficit = concurrency + prefetch - s.inflight - s.ready.count
                    // A drain held back by backpressure while writes keep failing probes with a
                    // one-item claim: whether the database takes claims decides if it ends (`drainStuck`).
                    let probe = s.backpressured && configuration.drain && s.inflight == 0 && flusher.stuckFailure != nil
                    // A write that failed for good since the top of this pass stops claims too (it is
                    // acted on at the next pass; meanwhile nothing more is taken).
                    if !s.claimInFlight && (s.wantClaim || s.urgentClaim || probe) && (!s.backpressured || probe) && !upstreamCoolingDown
                        && (deficit >= claimThreshold || s.urgentClaim || probe || (s.inflight == 0 && s.ready.isEmpty))
                        && flusher.fatalFailure == nil {
                        s.claimInFlight = true
                        // After a NOTIFY, claim even with a full buffer: an urgent item claimed now
                        // goes ahead of every buffered one (`merged`) and starts at the next free slot.
                        let wanted = probe ? 1 : max(deficit, s.urgentClaim ? Self.noticedClaim : 1)
                        let limit = min(wanted, configuration.claimBatch)
                        s.urgentClaim = false
                        let errors = s.databaseErrors
                        let backoff = errors == 0 ? Duration.zero : min(.seconds(5), .milliseconds(200) * errors)
                        // Claims and their preparation (token loads, decryption of a whole batch) run on
                        // the global executor, not `itemExecutor`: the items' thread stays free to read
                        // answers while a batch is prepared.
                        group.addTask(executorPreference: globalConcurrentExecutor) { [self] in
                            .claimed(await self.claimBatch(limit: limit, kinds: kinds, backoff: backoff))
                        }
                    } else if s.urgentClaim && s.claimInFlight && !s.urgentClaimInFlight && !s.backpressured && !upstreamCoolingDown {
                        // A NOTIFY while a claim runs: an urgent item (a sign-in) need not wait for it.
                        s.urgentClaimInFlight = true
                        s.urgentClaim = false
                        group.addTask(executorPreference: globalConcurrentExecutor) { [self] in
                            var batch = await self.claimBatch(limit: min(Self.noticedClaim, configuration.claimBatch), kinds: kinds, backoff: .zero)
                            batch.urgent = true
                            return .claimed(batch)
                        }
                    }
                    // Started from the front, removed together after (one shift of the buffer, not one per item).
                    var started = 0
                    while s.inflight < concurrency, started < s.ready.count, flusher.unflushed + s.inflight < bound {
                        let next = s.ready[started]
                        started += 1
                        group.addTask { [self] in
                            if Task.isCancelled || self.isPaused(next.item.jobID) {
                                return .item(next.item, kind: next.kind, .released)
                            }
                            return .item(next.item, kind: next.kind, await next.operation())
                        }
                        s.inflight += 1
                    }
                    if started > 0 { s.ready.removeFirst(started) }
                }
                if s.inflight == 0 && s.ready.isEmpty && !s.claiming {
                    if isStopping {
                        report.endedByStop = true
                        break loop
                    }
                    // Idle: everything we wrote is visible before we look at the backlog.
                    await waitForFlusherUnlessStopped()
                    if drainStuck(&report, s) { break loop }
                    if isStopping || flusher.fatalFailure != nil { continue }
                    if let finished = try? await store.completeFinishedJobs(), !finished.isEmpty {
                        logger.info("jobs completed", ["job.ids": finished.map(String.init).joined(separator: ",")])
                        jobCache.withLock { cache in finished.forEach { cache[$0] = nil } }
                    }
                    if configuration.drain {
                        let decision = await drainDecision(kinds: kinds, report: &report)
                        if decision == .exit { break loop }
                        if decision == .claimNow { s.wantClaim = true; continue }
                        if decision == .waitForOthers {
                            await clock.sleep(for: min(configuration.pollInterval, Self.othersLookAgain)) { [wakeup] in await wakeup.wait() }
                            s.wantClaim = true
                            continue
                        }
                    }
                    await wakeup.wait()
                    s.wantClaim = true
                    continue
                }
                if s.inflight == 0 && !s.claiming {
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
                case .noticed:
                    if !isStopping { group.addTask { [notice] in await notice.wait(); return .noticed } }
                case let .claimed(batch):
                    if handleClaimed(batch, state: &s, report: &report) == .stop { break loop }
                case let .item(item, kind, outcome):
                    s.inflight -= 1
                    await record(outcome, of: item, kind: kind, cancelled: s.graceExpired, report: &report)
                }
            }
            group.cancelAll()
        }
        }
        return report
    }

    enum ClaimVerdict { case carryOn, stop }

    /// A claim round trip's result: its items join the ready buffer, unprepared ones go back. A
    /// failure is retried with backoff when retrying can help (five in a row end a drain with
    /// nothing in flight); any other meaning stops the run with the error.
    func handleClaimed(_ batch: ClaimBatch, state s: inout LoopState, report: inout WorkerReport) -> ClaimVerdict {
        if batch.urgent { s.urgentClaimInFlight = false } else { s.claimInFlight = false }
        for entry in batch.unprepared { release(entry.item, kind: entry.kind, reason: entry.reason) }
        s.ready = Self.merged(s.ready, batch.ready)
        guard let error = batch.error else {
            s.databaseErrors = 0
            if !batch.urgent { s.wantClaim = batch.claimed == batch.requested }
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

    /// Updates the backpressure state and hurries the flusher while it holds. Brief spells are
    /// normal when the database is the slower side (debug); one that lasts 5 s (a lock, an
    /// outage) is a warning, and its end is logged.
    func noteBackpressure(_ s: inout LoopState, bound: Int) {
        let unflushed = flusher.unflushed
        let held = unflushed + s.inflight >= bound
        // Made only when something is logged (this runs on every turn of the loop).
        var fields: [String: String] { ["unflushed": "\(unflushed)", "in_flight": "\(s.inflight)", "bound": "\(bound)"] }
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

    /// With `drain`, nothing running, the flusher stuck retrying a write (`Flusher.stuckFailure`:
    /// a read-only or unwritable database) and the last claim failed too, the run ends with the
    /// write's failure instead of waiting for the database forever (backpressure holds back the
    /// claims that would have counted five failures; a probe claim of one item still runs, see
    /// `mainLoop`). While claims succeed, completions are retried as long as the run lasts.
    func drainStuck(_ report: inout WorkerReport, _ s: LoopState) -> Bool {
        guard configuration.drain, s.databaseErrors > 0, let stuck = flusher.stuckFailure else { return false }
        report.databaseFailure = report.databaseFailure ?? stuck
        return true
    }

    /// Waits until the flusher has written everything added so far, or a stop is requested, or
    /// (with `drain`) the flusher is stuck retrying a write.
    func waitForFlusherUnlessStopped() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [flusher] in await flusher.waitUntilIdle() }
            group.addTask { [stopSignal] in await stopSignal.wait() }
            if configuration.drain {
                group.addTask { [flusher] in   // real time: it only polls, and ends at once when cancelled
                    while flusher.stuckFailure == nil && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(200)) }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
