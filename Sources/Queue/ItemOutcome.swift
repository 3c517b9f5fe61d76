/// What performing one item produced.
public enum ItemOutcome: Sendable, Equatable {
    /// Done. `effect` is applied by the kind's `CompletionEffect` in the completion statement.
    case succeeded(ResultRecord, audit: AuditRecord?, effect: EffectPayload?)
    /// A permanent per-item failure; never retried. `effect` as for `succeeded`.
    case failed(ResultRecord, audit: AuditRecord?, effect: EffectPayload?)
    /// A transient failure of a call that reached the upstream (429, 5xx, a timeout or a reset
    /// after the request was sent): retried after backoff (at least `retryAfter` when given), or
    /// discarded with `result` (its outcome set to `discarded`) once the item has used its
    /// attempts and its retry time budget (`WorkerConfiguration.retryBudget`).
    case retry(error: String, retryAfter: Duration?, result: ResultRecord)
    /// The call never reached the upstream (connection refused, DNS failure, connect timeout):
    /// nothing was attempted, so the item goes back uncharged after a short backoff. Counts
    /// toward the worker's "upstream unreachable" stop (`WorkerConfiguration`).
    case unreachable(error: String)
    /// A configuration error: the item goes back uncharged and the whole job is paused.
    case pauseJob(reason: String)
    /// Not performed (shutdown or paused job): the item goes back uncharged.
    case released
}

/// How a completion counts in the worker's closing report once the database accepted it
/// (`WorkerReport`): counts are read from committed completion statements, never from outcomes.
public enum CompletionTally: Sendable, Hashable, CaseIterable {
    case succeeded, failed, discarded, retried, released, unreached
    /// Written but not counted (an item given back because its job was paused).
    case uncounted
}

/// A finished item waiting to be written, with its decided next state.
public struct Completion: Sendable, Equatable {
    public let item: ClaimedItem
    public let kind: String
    public let state: ItemState
    /// For `available`: how long until the next attempt.
    public let delay: Duration
    /// True when the attempt is given back (released, paused, upstream not reached).
    public let uncharged: Bool
    public let lastError: String?
    public let result: ResultRecord?
    public let audit: AuditRecord?
    public let effect: EffectPayload?
    /// Where the completion counts once written.
    public let tally: CompletionTally

    /// - Parameter tally: where it counts once written; nil derives it from `state` and
    ///   `uncharged` (an uncharged `available` is a release, a charged one a retry).
    public init(item: ClaimedItem, kind: String, state: ItemState, delay: Duration = .zero, uncharged: Bool = false,
                lastError: String? = nil, result: ResultRecord? = nil, audit: AuditRecord? = nil, effect: EffectPayload? = nil,
                tally: CompletionTally? = nil) {
        self.item = item
        self.kind = kind
        self.state = state
        self.delay = delay
        self.uncharged = uncharged
        self.lastError = lastError
        self.result = result
        self.audit = audit
        self.effect = effect
        self.tally = tally ?? Self.derivedTally(state: state, uncharged: uncharged)
    }

    private static func derivedTally(state: ItemState, uncharged: Bool) -> CompletionTally {
        switch state {
        case .succeeded: .succeeded
        case .failed: .failed
        case .discarded: .discarded
        case .available: uncharged ? .released : .retried
        case .running, .cancelled: .uncounted
        }
    }
}
