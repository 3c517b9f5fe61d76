import Foundation

extension Worker {
    /// Turns an outcome into a completion with its next state and backoff.
    func record(_ outcome: ItemOutcome, of item: ClaimedItem, kind: String, cancelled: Bool,
                report: inout WorkerReport) async {
        if let (result, failure) = outcome.unencodableEffect {
            // A kind's payload that does not encode is the kind's bug: the item fails, without its effect.
            report.failed += 1
            logger.error("an item's effect could not be encoded; recording it as failed without its effect", [
                "item.id": "\(item.id)", "job.id": "\(item.jobID)", "error": failure])
            var failed = result
            failed.outcome = .failed
            failed.detail = "{\"reason\":\"the item's effect could not be encoded\"}"
            flusher.add(Completion(item: item, kind: kind, state: .failed, lastError: "effect not encodable",
                                   result: failed, audit: AuditRecord(action: "item.effect_unencodable")))
            return
        }
        switch outcome {
        case let .succeeded(result, audit, effect):
            noteUpstream(success: true, error: nil, report: &report)
            report.succeeded += 1
            flusher.add(Completion(item: item, kind: kind, state: .succeeded, result: result, audit: audit, effect: effect))
        case let .failed(result, audit, effect):
            noteUpstream(success: true, error: nil, report: &report)
            report.failed += 1
            flusher.add(Completion(item: item, kind: kind, state: .failed, lastError: result.lastError ?? result.outcome.rawValue,
                                   result: result, audit: audit, effect: effect))
        case let .retry(error, retryAfter, result):
            if cancelled {
                release(item, kind: kind, reason: "released on shutdown", report: &report)
            } else if item.attempt >= item.maxAttempts {
                noteUpstream(success: false, error: error, report: &report)
                report.discarded += 1
                logger.warning("item discarded after its last attempt", [
                    "item.id": "\(item.id)", "job.id": "\(item.jobID)", "attempt": "\(item.attempt)", "error": error])
                var final = result
                final.outcome = .discarded
                flusher.add(Completion(item: item, kind: kind, state: .discarded, lastError: error, result: final,
                                       audit: AuditRecord(action: "item.discarded", detail: result.detail)))
            } else {
                noteUpstream(success: false, error: error, report: &report)
                report.retried += 1
                logger.debug("item will be retried", ["item.id": "\(item.id)", "attempt": "\(item.attempt)", "error": error])
                let delay = configuration.backoff.delay(afterAttempt: item.attempt, retryAfter: retryAfter, random: random)
                flusher.add(Completion(item: item, kind: kind, state: .available, delay: delay, lastError: error))
            }
        case let .pauseJob(reason):
            release(item, kind: kind, reason: "job paused", report: &report, counted: false)
            let first = pausedJobs.withLock { paused -> Bool in
                guard paused[item.jobID] == nil else { return false }
                paused[item.jobID] = .distantFuture
                return true
            }
            if first {
                report.pausedJobs[item.jobID] = reason
                logger.error("configuration error: job paused", ["job.id": "\(item.jobID)", "reason": reason])
                do {
                    _ = try await store.pauseJob(id: item.jobID, reason: reason)
                    let committed = clock.now
                    pausedJobs.withLock { $0[item.jobID] = committed }
                } catch {
                    logger.error("pausing the job failed", ["job.id": "\(item.jobID)", "error": "\(error)"])
                }
            }
        case .released:
            release(item, kind: kind, reason: cancelled ? "released on shutdown" : "released", report: &report)
        }
    }

    /// Tracks transient failures in a row. Past the threshold the upstream is taken to be down:
    /// a drain stops (exit 75) with items left for the next run instead of burning their attempts;
    /// a long-running worker pauses claiming for the cool-down.
    func noteUpstream(success: Bool, error: String?, report: inout WorkerReport) {
        let threshold = configuration.effectiveUpstreamFailureThreshold
        let tripped = upstream.withLock { u -> Bool in
            if success {
                u.consecutiveTransient = 0
                return false
            }
            u.consecutiveTransient += 1
            guard u.consecutiveTransient == threshold else { return false }
            u.coolDownUntil = clock.now.addingTimeInterval(configuration.upstreamCoolDown.seconds)
            return true
        }
        guard tripped else { return }
        logger.error("upstream looks down: transient failures in a row", [
            "failures": "\(threshold)", "error": error ?? "", "drain": "\(configuration.drain)",
            "cool_down_s": "\(configuration.upstreamCoolDown.seconds)"])
        if configuration.drain {
            report.upstreamFailure = "\(threshold) transient failures in a row; last: \(error ?? "?")"
            shutdownGracefully()
        }
    }

    /// True while claiming is paused after the upstream looked down.
    var upstreamCoolingDown: Bool {
        let now = clock.now
        return upstream.withLock { u in
            guard let until = u.coolDownUntil else { return false }
            if until > now { return true }
            u.coolDownUntil = nil
            u.consecutiveTransient = 0
            return false
        }
    }

    enum DrainDecision { case exit, claimNow, wait }

    /// With `--drain`, when idle: keep going while work is due, leased elsewhere, or retrying soon.
    func drainDecision(kinds: [String], report: inout WorkerReport) async -> DrainDecision {
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
            if clock.seconds(until: next) <= configuration.drainHorizon.seconds { return .wait }
            report.leftPending += 1
            logger.warning("retries scheduled beyond the drain horizon are left for the next run", [
                "next_run_at": "\(next)"])
        }
        // A paused job needs an operator: a drain that leaves one behind says so (exit 78).
        if let paused = try? await store.pausedJobs(kinds: kinds) {
            for (id, reason) in paused where report.pausedJobs[id] == nil {
                report.pausedJobs[id] = reason
                logger.error("job is paused and needs attention", ["job.id": "\(id)", "reason": reason])
            }
        }
        return .exit
    }
}

extension ItemOutcome {
    /// The result and the encoding error of a finished outcome whose effect payload did not encode.
    var unencodableEffect: (ResultRecord, String)? {
        switch self {
        case let .succeeded(result, _, effect?), let .failed(result, _, effect?):
            effect.encodingFailure.map { (result, $0) }
        default:
            nil
        }
    }
}
