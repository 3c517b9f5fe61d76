import Foundation

extension Worker {
    enum ChildResult: Sendable {
        case item(ClaimedItem, kind: String, ItemOutcome)
        /// The grace period after a stop request ran out.
        case graceExpired
        /// The grace watcher was cancelled (the loop ended first).
        case watcherEnded
    }

    /// Claims, dispatches into a bounded task group (prime, then top up on `next()`), and turns
    /// outcomes into completions for the flusher.
    func mainLoop() async -> WorkerReport {
        var report = WorkerReport()
        var jobs: [Int64: JobRecord] = [:]
        let kinds = handlers.keys.sorted()
        let concurrency = max(1, configuration.concurrency)
        let claimThreshold = max(1, min(configuration.claimBatch, concurrency / 4))
        var databaseErrors = 0

        await withTaskGroup(of: ChildResult.self) { group in
            var inflight = 0
            var wantClaim = true
            var graceExpired = false
            var stopLogged = false
            // The grace watcher: once a stop is requested, in-flight items get the grace period,
            // then the group is cancelled. It ends at once when the loop cancels the group.
            let grace = configuration.shutdownGraceSeconds
            group.addTask { [stopSignal] in
                await stopSignal.wait()
                if Task.isCancelled { return .watcherEnded }
                do { try await Task.sleep(for: .milliseconds(Int(grace * 1000))) } catch { return .watcherEnded }
                return .graceExpired
            }
            loop: while true {
                if isStopping {
                    if inflight == 0 { break loop }
                    if !stopLogged {
                        stopLogged = true
                        logger.info("stopping: no more claims; waiting for in-flight items", [
                            "items": "\(inflight)", "grace_s": "\(grace)"])
                    }
                } else {
                    if wakeup.consume() { wantClaim = true }
                    let free = concurrency - inflight
                    if wantClaim && (free >= claimThreshold || inflight == 0) {
                        let limit = min(free, configuration.claimBatch)
                        var claimed: [ClaimedItem] = []
                        do {
                            claimed = try await store.claim(owner: configuration.workerID, kinds: kinds, limit: limit,
                                                            leaseSeconds: configuration.leaseSeconds)
                            databaseErrors = 0
                        } catch {
                            databaseErrors += 1
                            logger.error("claim failed", ["error": "\(error)", "consecutive": "\(databaseErrors)"])
                            if configuration.drain && databaseErrors >= 5 && inflight == 0 {
                                report.databaseFailure = "\(error)"
                                break loop
                            }
                            try? await Task.sleep(for: .milliseconds(Int(min(5.0, 0.2 * Double(databaseErrors)) * 1000)))
                            continue
                        }
                        wantClaim = claimed.count == limit
                        if !claimed.isEmpty {
                            inFlight.insert(claimed.map(\.id))
                            inflight += await dispatch(claimed, jobs: &jobs, into: &group, report: &report)
                        }
                    }
                }
                if inflight == 0 {
                    if isStopping { break loop }
                    // Idle: everything we wrote is visible before we look at the backlog.
                    await flusher.waitUntilIdle()
                    if let finished = try? await store.completeFinishedJobs(), !finished.isEmpty {
                        logger.info("jobs completed", ["job.ids": finished.map(String.init).joined(separator: ",")])
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
                case let .item(item, kind, outcome):
                    inflight -= 1
                    await record(outcome, of: item, kind: kind, cancelled: graceExpired, report: &report)
                }
            }
            group.cancelAll()
        }
        return report
    }

    /// Prepares claimed items per job and adds one child task per item. Returns how many were added;
    /// items that cannot be prepared are released.
    private func dispatch(_ claimed: [ClaimedItem], jobs: inout [Int64: JobRecord],
                          into group: inout TaskGroup<ChildResult>, report: inout WorkerReport) async -> Int {
        let unknown = Set(claimed.map(\.jobID)).filter { jobs[$0] == nil }
        if !unknown.isEmpty, let fetched = try? await store.jobs(ids: Array(unknown)) {
            for job in fetched { jobs[job.id] = job }
        }
        var added = 0
        for (jobID, items) in Dictionary(grouping: claimed, by: \.jobID) {
            guard let job = jobs[jobID], let handler = handlers[job.kind] else {
                items.forEach { release($0, kind: jobs[jobID]?.kind ?? "", reason: "job not loaded", report: &report) }
                continue
            }
            let operations: [@Sendable () async -> ItemOutcome]
            do {
                operations = try await handler.prepare(items, of: job)
            } catch {
                logger.error("preparing items failed; releasing them", ["job.id": "\(jobID)", "error": "\(error)"])
                items.forEach { release($0, kind: job.kind, reason: "prepare failed", report: &report) }
                continue
            }
            for (item, operation) in zip(items, operations) {
                let kind = job.kind
                group.addTask { [self] in
                    if Task.isCancelled || self.isPaused(item.jobID) { return .item(item, kind: kind, .released) }
                    return .item(item, kind: kind, await operation())
                }
                added += 1
            }
        }
        return added
    }

    private func release(_ item: ClaimedItem, kind: String, reason: String, report: inout WorkerReport, counted: Bool = true) {
        if counted { report.released += 1 }
        flusher.add(Completion(item: item, kind: kind, state: .available, uncharged: true, lastError: reason))
    }

    /// Turns an outcome into a completion with its next state and backoff.
    func record(_ outcome: ItemOutcome, of item: ClaimedItem, kind: String, cancelled: Bool,
                report: inout WorkerReport) async {
        switch outcome {
        case let .succeeded(result, audit, effect):
            report.succeeded += 1
            flusher.add(Completion(item: item, kind: kind, state: .succeeded, result: result, audit: audit, effect: effect))
        case let .failed(result, audit, effect):
            report.failed += 1
            flusher.add(Completion(item: item, kind: kind, state: .failed, lastError: result.appleError ?? result.outcome,
                                   result: result, audit: audit, effect: effect))
        case let .retry(error, retryAfter, result):
            if cancelled {
                release(item, kind: kind, reason: "released on shutdown", report: &report)
            } else if item.attempt >= item.maxAttempts {
                report.failed += 1
                var final = result
                final.outcome = "discarded"
                flusher.add(Completion(item: item, kind: kind, state: .discarded, lastError: error, result: final,
                                       audit: AuditRecord(action: "item.discarded", detail: result.detail)))
            } else {
                report.retried += 1
                let delay = configuration.backoff.delay(afterAttempt: item.attempt, retryAfterSeconds: retryAfter, random: random)
                flusher.add(Completion(item: item, kind: kind, state: .available, delaySeconds: delay, lastError: error))
            }
        case let .pauseJob(reason):
            release(item, kind: kind, reason: "job paused", report: &report, counted: false)
            let first = pausedJobs.withLock { $0.insert(item.jobID).inserted }
            if first {
                report.pausedJobs[item.jobID] = reason
                logger.error("configuration error: job paused", ["job.id": "\(item.jobID)", "reason": reason])
                do {
                    _ = try await store.pauseJob(id: item.jobID, reason: reason)
                } catch {
                    logger.error("pausing the job failed", ["job.id": "\(item.jobID)", "error": "\(error)"])
                }
            }
        case .released:
            release(item, kind: kind, reason: cancelled ? "released on shutdown" : "released", report: &report)
        }
    }

    enum DrainDecision { case exit, claimNow, wait }

    /// With `--drain`, when idle: keep going while work is due, leased elsewhere, or retrying soon.
    private func drainDecision(kinds: [String], report: inout WorkerReport) async -> DrainDecision {
        let backlog: QueueBacklog
        do {
            backlog = try await store.backlog(kinds: kinds)
        } catch {
            logger.error("reading the backlog failed", ["error": "\(error)"])
            report.databaseFailure = "\(error)"
            return .exit
        }
        if backlog.dueNow > 0 { return .claimNow }
        if backlog.running > 0 {
            // In flight elsewhere, or held by a dead worker until its lease expires.
            let rescued = await rescue()
            return rescued.retried > 0 ? .claimNow : .wait
        }
        if let next = backlog.nextRunAt {
            if next.timeIntervalSinceNow <= configuration.drainHorizonSeconds { return .wait }
            report.leftPending += 1
            logger.warning("retries scheduled beyond the drain horizon are left for the next run", [
                "next_run_at": "\(next)"])
            return .exit
        }
        return .exit
    }
}
