/// Counters kept by the sandbox since start (or the last reset).
public struct SandboxStats: Sendable, Equatable, Encodable {
    /// Requests per endpoint path (unknown paths are counted as `other`).
    public var requests: [String: Int] = [:]
    /// Responses per HTTP status code (as a string key, e.g. `"200"`).
    public var responses: [String: Int] = [:]
    /// Error responses per Apple `error` code, e.g. `invalid_client`.
    public var errors: [String: Int] = [:]
    /// Injected faults per kind (`429`, `500`, `503`, `html`, `reset`, `stall`, `truncated`, `invalid_client`).
    public var faults: [String: Int] = [:]
    /// Successful `/auth/revoke` calls (any token).
    public var revokes = 0
    /// Requests answered 429 by the per-team rate limit (`RateLimitSettings`), not by a fault.
    public var throttled = 0
    /// Requests whose client secret was accepted (cache hits included).
    public var clientSecretsVerified = 0
    /// Client secrets whose signature was actually checked (cache misses).
    public var clientSecretSignatureChecks = 0
    /// `client_credentials` bearer tokens minted.
    public var bearerTokensMinted = 0
    /// Access tokens minted by refresh-token validation.
    public var accessTokensMinted = 0
    /// id_tokens signed.
    public var idTokensSigned = 0
    /// Refresh answers that handed out a user's id_token signed earlier (`IDTokenCache`).
    public var idTokensReused = 0
    /// `transfer_sub` values handed to sending teams by `/auth/usermigrationinfo`.
    public var transferSubsIssued = 0
    /// `transfer_sub` values exchanged by recipient teams for their `sub`.
    public var transferSubsExchanged = 0
    /// Identity tokens and authorization codes issued by `/__sandbox/authorize`.
    public var authorizationsIssued = 0
    /// Authorization codes exchanged (`grant_type=authorization_code` answered 200).
    public var codesExchanged = 0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case requests, responses, errors, faults, revokes, throttled
        case clientSecretsVerified = "client_secrets_verified"
        case clientSecretSignatureChecks = "client_secret_signature_checks"
        case bearerTokensMinted = "bearer_tokens_minted"
        case accessTokensMinted = "access_tokens_minted"
        case idTokensSigned = "id_tokens_signed"
        case idTokensReused = "id_tokens_reused"
        case transferSubsIssued = "transfer_subs_issued"
        case transferSubsExchanged = "transfer_subs_exchanged"
        case authorizationsIssued = "authorizations_issued"
        case codesExchanged = "codes_exchanged"
    }
}

/// What one request contributes to the counters; applied under a single lock acquisition.
struct RequestTally {
    var endpoint: String
    var status = 0
    var errorCode: String?
    var fault: String?
    var revoked = false
    var throttled = false
    var secretVerified = false
    var secretChecked = false
    var bearerMinted = false
    var accessMinted = false
    var idTokenSigned = false
    var idTokenReused = false
    var transferSubIssued = false
    var transferSubExchanged = false
    var codeExchanged = false

    init(endpoint: String) { self.endpoint = endpoint }
}

extension SandboxStats {
    mutating func apply(_ t: RequestTally) {
        requests[t.endpoint, default: 0] += 1
        if t.status != 0 { responses[String(t.status), default: 0] += 1 }
        if let e = t.errorCode { errors[e, default: 0] += 1 }
        if let f = t.fault { faults[f, default: 0] += 1 }
        if t.revoked { revokes += 1 }
        if t.throttled { throttled += 1 }
        if t.secretVerified { clientSecretsVerified += 1 }
        if t.secretChecked { clientSecretSignatureChecks += 1 }
        if t.bearerMinted { bearerTokensMinted += 1 }
        if t.accessMinted { accessTokensMinted += 1 }
        if t.idTokenSigned { idTokensSigned += 1 }
        if t.idTokenReused { idTokensReused += 1 }
        if t.transferSubIssued { transferSubsIssued += 1 }
        if t.transferSubExchanged { transferSubsExchanged += 1 }
        if t.codeExchanged { codesExchanged += 1 }
    }
}
