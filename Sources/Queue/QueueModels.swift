/// A job as the worker sees it: one request from cron or ops.
public struct JobRecord: Sendable, Equatable {
    public let id: Int64
    public let kind: String
    /// The job spec as JSON object text.
    public let spec: String
    public let state: String

    public init(id: Int64, kind: String, spec: String, state: String) {
        self.id = id
        self.kind = kind
        self.spec = spec
        self.state = state
    }
}

/// A per-user unit this worker holds a lease on.
public struct ClaimedItem: Sendable, Equatable {
    public let id: Int64
    public let jobID: Int64
    public let accountID: Int64?
    /// Item input as JSON text, for kinds whose items are not accounts.
    public let payload: String?
    /// The attempt this claim started (1-based); completions are guarded by it.
    public let attempt: Int
    public let maxAttempts: Int

    public init(id: Int64, jobID: Int64, accountID: Int64?, payload: String?, attempt: Int, maxAttempts: Int) {
        self.id = id
        self.jobID = jobID
        self.accountID = accountID
        self.payload = payload
        self.attempt = attempt
        self.maxAttempts = maxAttempts
    }
}

/// The row written to `siwa.results` when an item ends. Holds no secrets: tokens only as fingerprints.
public struct ResultRecord: Sendable, Equatable {
    /// Kind-specific outcome, e.g. `valid`, `invalid`, `failed`, `discarded`.
    public var outcome: String
    public var httpStatus: Int?
    /// Apple's `error` code, e.g. `invalid_grant`.
    public var appleError: String?
    /// JSON object text with safe detail.
    public var detail: String
    public var tokenFingerprint: String?

    public init(outcome: String, httpStatus: Int? = nil, appleError: String? = nil, detail: String = "{}", tokenFingerprint: String? = nil) {
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.appleError = appleError
        self.detail = detail
        self.tokenFingerprint = tokenFingerprint
    }
}

/// An `audit_log` row written in the same statement as the item's completion.
public struct AuditRecord: Sendable, Equatable {
    public var action: String
    /// JSON object text with safe detail.
    public var detail: String

    public init(action: String, detail: String = "{}") {
        self.action = action
        self.detail = detail
    }
}

/// What performing one item produced.
public enum ItemOutcome: Sendable, Equatable {
    /// Done. `effect` (JSON object text) is applied to the account by the kind's effect SQL.
    case succeeded(ResultRecord, audit: AuditRecord?, effect: String?)
    /// A permanent per-item failure; never retried.
    case failed(ResultRecord, audit: AuditRecord?, effect: String?)
    /// A transient failure: retried after backoff (at least `retryAfterSeconds` when given),
    /// or discarded with `result` once attempts are exhausted.
    case retry(error: String, retryAfterSeconds: Double?, result: ResultRecord)
    /// A configuration error: the item goes back uncharged and the whole job is paused.
    case pauseJob(reason: String)
    /// Not performed (shutdown or paused job): the item goes back uncharged.
    case released
}

/// Terminal and non-terminal item states as stored in `siwa.job_items.state`.
public enum ItemState: String, Sendable {
    case available, running, succeeded, failed, discarded, cancelled
}

/// A finished item waiting to be written, with its decided next state.
public struct Completion: Sendable, Equatable {
    public let item: ClaimedItem
    public let kind: String
    public let state: ItemState
    /// For `available`: seconds until the next attempt.
    public let delaySeconds: Double
    /// True when the attempt is given back (released, paused).
    public let uncharged: Bool
    public let lastError: String?
    public let result: ResultRecord?
    public let audit: AuditRecord?
    public let effect: String?

    public init(item: ClaimedItem, kind: String, state: ItemState, delaySeconds: Double = 0, uncharged: Bool = false,
                lastError: String? = nil, result: ResultRecord? = nil, audit: AuditRecord? = nil, effect: String? = nil) {
        self.item = item
        self.kind = kind
        self.state = state
        self.delaySeconds = delaySeconds
        self.uncharged = uncharged
        self.lastError = lastError
        self.result = result
        self.audit = audit
        self.effect = effect
    }
}
