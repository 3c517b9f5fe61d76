import Foundation
import Postgres

extension Worker {
    /// Turns an outcome into a completion with its next state and backoff. Nothing is counted
    /// here: the report's counts come from what the flusher's statements wrote.
    func record(_ outcome: ItemOutcome, of item: ClaimedItem, kind: String, cancelled: Bool,
                report: inout WorkerReport) async {
        if let (result, failure) = outcome.unencodableEffect {
            // A kind's payload that does not encode is the kind's bug: the item fails, without its effect.
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
            noteUpstream(.answered, error: nil, report: &report)
            flusher.add(Completion(item: item, kind: kind, state: .succeeded, result: result, audit: audit, effect: effect))
        case let .failed(result, audit, effect):
            noteUpstream(.answered, error: nil, report: &report)
            flusher.add(Completion(item: item, kind: kind, state: .failed, lastError: result.lastError ?? result.outcome.rawValue,
                                   result: result, audit: audit, effect: effect))
        case let .retry(error, retryAfter, result):
            if cancelled {
                release(item, kind: kind, reason: "released on shutdown")
                return
            }
            noteUpstream(.transient, error: error, report: &report)
            if retryBudgetSpent(item) {
                logger.warning("item discarded after its last attempt", [
                    "item.id": "\(item.id)", "job.id": "\(item.jobID)", "attempt": "\(item.attempt)", "error": error])
                var final = result
                final.outcome = .discarded
                flusher.add(Completion(item: item, kind: kind, state: .discarded, lastError: error, result: final,
                                       audit: AuditRecord(action: "item.discarded", detail: result.detail)))
            } else {
                logger.debug("item will be retried", ["item.id": "\(item.id)", "attempt": "\(item.attempt)", "error": error])
                let delay = configuration.backoff.delay(afterAttempt: item.attempt, retryAfter: retryAfter, random: random)
                flusher.add(Completion(item: item, kind: kind, state: .available, delay: delay, lastError: error))
            }
        case let .unreachable(error):
            if cancelled {
                release(item, kind: kind, reason: "released on shutdown")
                return
            }
            noteUpstream(.unreached, error: error, report: &report)
            // Nothing reached the upstream: the attempt is given back, and the item waits the
            // first backoff step before it is claimed again.
            let delay = configuration.backoff.delay(afterAttempt: 1, retryAfter: nil, random: random)
            flusher.add(Completion(item: item, kind: kind, state: .available, delay: delay, uncharged: true,
                                   lastError: error, tally: .unreached))
        case let .pauseJob(reason):
            release(item, kind: kind, reason: "job paused", counted: false)
            await pause(item.jobID, reason: reason, report: &report)
        case .released:
            release(item, kind: kind, reason: cancelled ? "released on shutdown" : "released")
        }
    }

    /// True when a transient failure of this attempt discards the item: it has used its max
    /// attempts AND its first attempt started at least `retryBudget` ago (an item whose first
    /// attempt time is unknown counts as old).
    func retryBudgetSpent(_ item: ClaimedItem) -> Bool {
        guard item.attempt >= item.maxAttempts else { return false }
        guard let first = item.firstAttemptAt else { return true }
        return clock.now.timeIntervalSince(first) >= configuration.retryBudget.seconds
    }

    /// Pauses a job once per worker (the first item to ask), recording when the pause committed.
    func pause(_ jobID: Int64, reason: String, report: inout WorkerReport) async {
        let first = pausedJobs.withLock { paused -> Bool in
            guard paused[jobID] == nil else { return false }
            paused[jobID] = .distantFuture
            return true
        }
        guard first else { return }
        report.pausedJobs[jobID] = reason
        logger.error("configuration error: job paused", ["job.id": "\(jobID)", "reason": reason])
        do {
            _ = try await store.pauseJob(id: jobID, reason: reason)
            let committed = clock.now
            pausedJobs.withLock { $0[jobID] = committed }
        } catch {
            logger.error("pausing the job failed", ["job.id": "\(jobID)", "error": "\(error)"])
        }
    }

    /// `waitForOthers`: items are leased elsewhere (another process's, or a dead worker's until
    /// its lease expires): look again soon rather than at the next poll tick, so a drain run by
    /// several processes ends when its last item does, not up to 1.5 poll intervals later.
    enum DrainDecision { case exit, claimNow, wait, waitForOthers }

    /// How soon a drain looks again while items are leased elsewhere (at most `pollInterval`).
    static let othersLookAgain: Duration = .milliseconds(100)

    /// With `--drain`, when idle: keep going while work is due, leased elsewhere, or retrying soon.
    func drainDecision(kinds: [String], report: inout WorkerReport) async -> DrainDecision {
        let backlog: QueueBacklog
        do {
            backlog = try await store.backlog(kinds: kinds)
        } catch {
            logger.error("reading the backlog failed", ["error": "\(error)"])
            report.databaseFailure = DatabaseError.from(error)
            return .exit
        }
        if backlog.dueNow > 0 { return .claimNow }
        if backlog.running > 0 {
            // In flight elsewhere, or held by a dead worker until its lease expires.
            let rescued = await rescue()
            return rescued.retried > 0 ? .claimNow : .waitForOthers
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
        await noteUnrunnable(report: &report)
        return .exit
    }

    /// Work due that no handler of this process can run (`unavailableKinds`), and jobs of its
    /// kinds out of the store's scope (`JobStore.outOfScopeJobs`: another team's): a drain that
    /// leaves it behind says so, naming each job (exit 78). Neither is paused: another worker
    /// may hold what this one lacks.
    func noteUnrunnable(report: inout WorkerReport) async {
        do {
            for job in try await store.outOfScopeJobs(kinds: handlers.keys.sorted()) {
                let reason = store.outOfScopeReason
                report.unrunnable.append(UnrunnableJob(job: job, reason: reason))
                logger.error("work due that this worker cannot run", ["job.id": "\(job.id)", "kind": job.kind, "reason": reason])
            }
        } catch {
            logger.warning("looking for jobs out of this worker's scope failed", ["error": "\(error)"])
        }
        let unavailable = configuration.unavailableKinds
        guard !unavailable.isEmpty else { return }
        do {
            for job in try await store.openJobs(kinds: unavailable.keys.sorted()) {
                let reason = unavailable[job.kind] ?? "no handler"
                report.unrunnable.append(UnrunnableJob(job: job, reason: reason))
                logger.error("work due that this worker cannot run", ["job.id": "\(job.id)", "kind": job.kind, "reason": reason])
            }
        } catch {
            logger.warning("looking for work of kinds this worker cannot run failed", ["error": "\(error)"])
        }
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
