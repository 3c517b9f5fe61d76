/// The Apple endpoints whose calls a `RequestGate` admits: each has its own budget per team.
/// `GET /auth/keys` is not gated (it is cached, unauthenticated and rare).
public enum GatedEndpoint: String, Sendable, CaseIterable {
    /// `POST /auth/token` (refresh-token validation, `client_credentials`).
    case token = "/auth/token"
    /// `POST /auth/revoke`.
    case revoke = "/auth/revoke"
    /// `POST /auth/usermigrationinfo` (app transfer, TN3159).
    case userMigrationInfo = "/auth/usermigrationinfo"
}

/// Admission before each call to a gated endpoint, and what came of it: the seam for a rate
/// budget shared by every worker of a team (SIWAJobs' `RateBudget`). `AppleIDClient` awaits
/// `admit` before sending, then `observe` with every HTTP answer or `unanswered` when none came.
public protocol RequestGate: Sendable {
    /// Returns once one call to `endpoint` may be sent.
    /// - Throws: `AppleIDError`: with `transportKind == .cancelled` when the calling task is
    ///   cancelled or the gate is stopped (a shutdown: the item is released, nothing was sent);
    ///   transient or configuration errors when the budget itself cannot be read.
    func admit(_ endpoint: GatedEndpoint) async throws(AppleIDError)

    /// What Apple answered to an admitted call: the HTTP status and its parsed `Retry-After`
    /// (RFC 9110 §10.2.3), e.g. a 429 that should slow and pause every worker of the team.
    func observe(_ endpoint: GatedEndpoint, status: Int, retryAfter: Duration?) async

    /// An admitted call to `endpoint` got no HTTP answer: a transport failure, or the calling
    /// task was cancelled while it was in flight.
    func unanswered(_ endpoint: GatedEndpoint) async
}

extension RequestGate {
    /// Default: nothing to learn from a call without an answer.
    public func unanswered(_ endpoint: GatedEndpoint) async {}
}
