import Queue

/// The outcomes of a sign-in (`siwa.sign_ins.outcome`, and `siwa.results.outcome` of its item),
/// see `SignInHandler`. `already_processed` and `discarded` appear in results only.
enum SignInOutcome: String, OutcomeCode, Encodable {
    /// An account existed for this user (same team and `sub`, or its `transfer_sub`): it keeps its
    /// id and gets the new refresh token.
    case linked
    /// A new account was made.
    case created
    /// The identity token failed verification; `reason` says which check (`nonce_mismatch`, ...).
    case identityTokenRejected = "identity_token_rejected"
    /// Apple refused the authorization code (`invalid_grant`: expired, used, another client or
    /// redirect URI), or Apple stayed unavailable until the code could no longer be valid.
    case codeRejected = "code_rejected"
    /// This worker cannot exchange for the client (no credentials, `invalid_client`, token key).
    case configurationError = "configuration_error"
    /// The `external_user_id` given already belongs to another account of the client.
    case conflict
    case alreadyProcessed = "already_processed"
    case discarded
}

/// What a sign-in ended as: the columns written to its `siwa.sign_ins` row (with the wipe of the
/// code, the identity token and the nonce) and the detail of its audit row. Holds no secret:
/// tokens appear only as fingerprints.
struct SignInVerdict: Sendable, Equatable {
    var outcome: SignInOutcome
    /// Machine code: a verification reason (`nonce_mismatch`), Apple's error (`invalid_grant`), ...
    var reason: String?
    /// Human text, safe to log.
    var detail: String?
    var accountID: Int64?
    var sub: String?
    var accountEmail: String?
    var isPrivateEmail: Bool?
    var realUserStatus: Int?
    /// `sub`, `transfer_sub:recipient|sender|import`, or `new`.
    var matchedVia: String?
    /// Of the identity token and the code as submitted (keyed: `TokenKeyring.fingerprint`).
    var identityTokenFingerprint: String?
    var codeFingerprint: String?
    /// Of the refresh token stored.
    var refreshTokenFingerprint: String?
    /// Apple's HTTP status, when the code was sent.
    var httpStatus: Int?
    /// Milliseconds from submission to the worker starting it (`wait_ms`, the database's and the
    /// worker's clocks) and of the code exchange (`apple_ms`), for the result's detail.
    var waitMs: Int?
    var appleMs: Int?

    init(_ outcome: SignInOutcome, reason: String? = nil, detail: String? = nil) {
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
    }

    /// The item's `siwa.results` row.
    var result: ResultRecord {
        ResultRecord(outcome, httpStatus: httpStatus, appleError: outcome == .codeRejected || outcome == .configurationError ? reason : nil,
                     detail: jsonObject(["reason": reason, "detail": detail, "matched_via": matchedVia,
                                         "wait_ms": waitMs.map { String($0) }, "apple_ms": appleMs.map { String($0) }]),
                     tokenFingerprint: refreshTokenFingerprint)
    }

    /// The audit row's detail.
    func auditDetail(signInID: Int64) -> String {
        jsonObject(["sign_in_id": String(signInID), "reason": reason, "matched_via": matchedVia,
                    "identity_token_fingerprint": identityTokenFingerprint, "code_fingerprint": codeFingerprint,
                    "token_fingerprint": refreshTokenFingerprint, "real_user_status": realUserStatus.map { String($0) }])
    }
}
