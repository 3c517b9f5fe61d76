import Foundation

/// What the worker has seen of the upstream (the service the kinds call) lately.
struct UpstreamState {
    /// Transient failures (reached or not) in a row, with no answer in between.
    var transientInRow = 0
    /// Calls in a row that never reached the upstream, with no call reaching it in between.
    var unreachedInRow = 0
    /// Set once a threshold was crossed, until an answer or the end of the cool-down.
    var tripped = false
    /// When claiming may resume (long-running mode).
    var coolDownUntil: Date?
    /// Distinct items claimed this run, kept until there are enough to scale the threshold.
    var claimed = Set<Int64>()
}

extension Worker {
    /// What one outcome says about the upstream.
    enum UpstreamSignal {
        /// It answered (a success, or a permanent per-item answer).
        case answered
        /// A transient failure after the call reached it (429, 5xx, a timeout, a reset).
        case transient
        /// The call never reached it (connection refused, DNS, connect timeout).
        case unreached
    }

    /// Notes items claimed, for the scaled "unreachable" threshold.
    func noteClaimed(_ ids: [Int64]) {
        let enough = configuration.effectiveUpstreamFailureThreshold
        upstream.withLock { u in
            for id in ids where u.claimed.count < enough { u.claimed.insert(id) }
        }
    }

    /// Tracks failures in a row. Past a threshold the upstream is taken to be down: a drain stops
    /// (exit 75) with items left for the next run instead of burning their attempts; a
    /// long-running worker pauses claiming for the cool-down. Two thresholds:
    /// - `upstreamFailureThreshold` transient failures in a row (default max(100, 2 × C));
    /// - `unreachableFailureThreshold` calls in a row that never reached the upstream, scaled to
    ///   the job (default min(that, max(10, 2 × distinct items claimed))), so that a job of 11
    ///   items against an unreachable upstream stops after about two rounds, all uncharged.
    func noteUpstream(_ signal: UpstreamSignal, error: String?, report: inout WorkerReport) {
        let threshold = configuration.effectiveUpstreamFailureThreshold
        let now = clock.now
        let coolDown = configuration.upstreamCoolDown.seconds
        let verdict = upstream.withLock { u -> String? in
            switch signal {
            case .answered:
                u.transientInRow = 0
                u.unreachedInRow = 0
                u.tripped = false
                return nil
            case .transient:
                u.transientInRow += 1
                u.unreachedInRow = 0
            case .unreached:
                u.transientInRow += 1
                u.unreachedInRow += 1
            }
            guard !u.tripped else { return nil }
            let unreachable = configuration.effectiveUnreachableThreshold(distinctClaimed: u.claimed.count)
            let verdict: String
            if u.unreachedInRow >= unreachable {
                verdict = "\(u.unreachedInRow) calls in a row never reached it (connection refused, DNS or connect failure), "
                    + "with nothing reaching it in between"
            } else if u.transientInRow >= threshold {
                verdict = "\(u.transientInRow) transient failures in a row"
            } else {
                return nil
            }
            u.tripped = true
            u.coolDownUntil = now.addingTimeInterval(coolDown)
            return verdict
        }
        guard let verdict else { return }
        logger.error("upstream looks down", [
            "verdict": verdict, "error": error ?? "", "drain": "\(configuration.drain)", "cool_down_s": "\(coolDown)"])
        if configuration.drain {
            report.upstreamFailure = "\(verdict); last: \(error ?? "?")"
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
            u.transientInRow = 0
            u.unreachedInRow = 0
            u.tripped = false
            return false
        }
    }
}
