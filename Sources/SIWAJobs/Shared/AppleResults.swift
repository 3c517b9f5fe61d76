import Queue

extension ResultColumn {
    /// `siwa.results.apple_error`: Apple's `error` code, e.g. `invalid_grant` (apple-api.md §2.6).
    /// Owned by the kinds that call Apple; the queue never names it.
    static let appleError = ResultColumn("apple_error")
    /// `siwa.results.token_fingerprint`: `sha256:` + 16 hex of the refresh token an item used,
    /// never the token. Owned by the kinds that read stored tokens.
    static let tokenFingerprint = ResultColumn("token_fingerprint")
}

extension ResultRecord {
    /// The result of an item that called Apple: `appleError` and `tokenFingerprint` go to the
    /// kind-owned columns, and a permanent failure's `last_error` is Apple's error code.
    init(_ outcome: some OutcomeCode, httpStatus: Int? = nil, appleError: String? = nil, detail: String = "{}",
         tokenFingerprint: String? = nil) {
        var values: [ResultColumn: String] = [:]
        values[.appleError] = appleError
        values[.tokenFingerprint] = tokenFingerprint
        self.init(outcome: outcome, httpStatus: httpStatus, detail: detail, kindValues: values, lastError: appleError)
    }

    /// Apple's error code (kind-owned column `apple_error`).
    var appleError: String? {
        get { kindValues[.appleError] }
        set {
            kindValues[.appleError] = newValue
            lastError = newValue
        }
    }
}

extension KindWrites {
    /// The writes of a kind that calls Apple with stored tokens: the `apple_error` and
    /// `token_fingerprint` columns, the kind's effect, and whether its succeeded range items keep
    /// their row (`KindWrites.keepsSucceededRangeItems`).
    static func appleCalls(effect: CompletionEffect?, keepsSucceededRangeItems: Bool = false) -> KindWrites {
        KindWrites(resultColumns: [.appleError, .tokenFingerprint], effect: effect, keepsSucceededRangeItems: keepsSucceededRangeItems)
    }
}
