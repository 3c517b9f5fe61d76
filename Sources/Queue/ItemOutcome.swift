/// What performing one item produced.
public enum ItemOutcome: Sendable, Equatable {
    /// Done. `effect` is applied by the kind's `CompletionEffect` in the completion statement.
    case succeeded(ResultRecord, audit: AuditRecord?, effect: EffectPayload?)
    /// A permanent per-item failure; never retried. `effect` as for `succeeded`.
    case failed(ResultRecord, audit: AuditRecord?, effect: EffectPayload?)
    /// A transient failure: retried after backoff (at least `retryAfter` when given), or discarded
    /// with `result` (its outcome set to `discarded`) once attempts are exhausted.
    case retry(error: String, retryAfter: Duration?, result: ResultRecord)
    /// A configuration error: the item goes back uncharged and the whole job is paused.
    case pauseJob(reason: String)
    /// Not performed (shutdown or paused job): the item goes back uncharged.
    case released
}

/// A finished item waiting to be written, with its decided next state.
public struct Completion: Sendable, Equatable {
    public let item: ClaimedItem
    public let kind: String
    public let state: ItemState
    /// For `available`: how long until the next attempt.
    public let delay: Duration
    /// True when the attempt is given back (released, paused).
    public let uncharged: Bool
    public let lastError: String?
    public let result: ResultRecord?
    public let audit: AuditRecord?
    public let effect: EffectPayload?

    public init(item: ClaimedItem, kind: String, state: ItemState, delay: Duration = .zero, uncharged: Bool = false,
                lastError: String? = nil, result: ResultRecord? = nil, audit: AuditRecord? = nil, effect: EffectPayload? = nil) {
        self.item = item
        self.kind = kind
        self.state = state
        self.delay = delay
        self.uncharged = uncharged
        self.lastError = lastError
        self.result = result
        self.audit = audit
        self.effect = effect
    }
}
