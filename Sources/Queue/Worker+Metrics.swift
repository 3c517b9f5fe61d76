import Foundation

extension Worker {
    /// Completions of this run the database accepted so far, by kind and tally (the counts of the
    /// closing report, live). Updated once per written batch under the flusher's existing lock,
    /// never per item; read at scrape time. Safe from any thread.
    public var acceptedByKind: [String: [CompletionTally: Int]] { flusher.outcome.withLock { $0.acceptedByKind } }

    /// When a succeeded completion of each kind last committed in this run (this process's clock).
    public var lastSuccessByKind: [String: Date] { flusher.outcome.withLock { $0.lastSuccess } }
}

extension CompletionTally {
    /// The tally as a metric label: `succeeded`, `failed`, `discarded`, `retried`, `released`,
    /// `unreached`; nil for `uncounted`.
    public var label: String? {
        switch self {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .discarded: "discarded"
        case .retried: "retried"
        case .released: "released"
        case .unreached: "unreached"
        case .uncounted: nil
        }
    }
}
