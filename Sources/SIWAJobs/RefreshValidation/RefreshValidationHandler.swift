import AppleID
import Clocks
import Postgres
import Queue
import SIWACrypto

/// Nightly refresh-token validation: `POST /auth/token` with `grant_type=refresh_token` for each
/// account of one team and client, at most once a day per account (Apple: "Verifying a user").
///
/// Outcomes (result `outcome`): `valid` (200), `invalid` (`invalid_grant`: the Apple link is gone),
/// `failed` (another permanent error, e.g. `invalid_request`), `discarded` (transient errors until
/// attempts ran out). `invalid_client` and other configuration errors pause the job.
public struct RefreshValidationHandler: JobHandler {
    public static let kind = "refresh-validation"
    public var kind: String { Self.kind }

    let pool: PostgresPool
    let registry: AppleClientRegistry
    let keyring: TokenKeyring

    public init(pool: PostgresPool, registry: AppleClientRegistry, keyring: TokenKeyring) {
        self.pool = pool
        self.registry = registry
        self.keyring = keyring
    }

    /// Result outcomes (`siwa.results.outcome`).
    enum Outcome: String, OutcomeCode {
        case valid, invalid, failed, discarded
    }

    /// The kind's effect in the completion statement (see `CompletionEffect`), between the safety
    /// stop's steps: a verdict (a succeeded item's outcome, `valid` or `invalid`) becomes the
    /// account's `token_status`, and an `invalid` one waits while the stop judges the job. It reads
    /// the outcome the result row carries anyway, so items send no effect payload (parsing it, a
    /// `jsonb` per item, was about 1% of the database's CPU per item; README "Cost per item").
    static let effect = CompletionEffect([safetyStop.counting, .init("applied_effects", unsafeSQL: """
        UPDATE siwa.accounts a
        SET token_status = d.outcome, token_checked_at = now(), updated_at = now()
        FROM done d
        WHERE a.id = d.account_id AND d.state = 'succeeded' AND d.outcome IN ('valid', 'invalid')
          AND NOT (d.outcome = 'invalid' AND \(SafetyStopSQL.judging))
        """)] + safetyStop.deciding)

    /// A succeeded validation keeps its planned row: its result is the record (one row write fewer
    /// per item; nothing of this kind reads a finished item's state).
    public var writes: KindWrites { .appleCalls(effect: Self.effect, keepsSucceededRangeItems: true) }

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        try await StoredTokens.prepare(items, of: job, registry: registry, pool: pool, keyring: keyring, operation: Self.validate)
    }

    static func validate(item: ClaimedItem, stored: StoredTokens.Token?, client: AppleIDClient, keyring: TokenKeyring) async -> ItemOutcome {
        guard let accountID = item.accountID, let stored, stored.ciphertext != nil, stored.keyID != nil else {
            return .failed(ResultRecord(Outcome.failed, detail: jsonObject(["reason": "account has no stored refresh token"])),
                           audit: nil, effect: nil)
        }
        let token: String
        do { token = try StoredTokens.open(stored, accountID: accountID, keyring: keyring) } catch { return .pauseJob(reason: error.description) }
        let fingerprint = StoredTokens.keyedFingerprint(stored, token: token, keyring: keyring)
        do {
            let response = try await client.validateRefreshToken(token)
            // A 200 is the verdict even when Apple's body lacks access_token (the warning says so).
            let warning = response.warnings.isEmpty ? nil : response.warnings.joined(separator: "; ")
            return .succeeded(
                ResultRecord(Outcome.valid, httpStatus: 200, detail: warning.map { jsonObject(["warning": $0]) } ?? "{}",
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.validated", detail: jsonObject(["token_fingerprint": fingerprint, "warning": warning])),
                effect: nil)
        } catch {
            // A non-JSON 4xx is retried once, then permanent (AppleIDError.atAttempt).
            return outcome(for: error.atAttempt(item.attempt), fingerprint: fingerprint, clientID: client.clientID)
        }
    }

    static func outcome(for error: AppleIDError, fingerprint: String, clientID: String) -> ItemOutcome {
        if error.isCancellation { return .released }   // shutdown: not the item's fault, no attempt charged
        if error.neverReachedApple { return .unreachable(error: error.description) }   // uncharged (issue #8)
        if let reason = error.certificatePauseReason(calling: "Apple for client '\(clientID)'") { return .pauseJob(reason: reason) }
        let detail = jsonObject(["reason": error.detail])
        switch error.errorClass {
        case .configuration:
            return .pauseJob(reason: "Apple rejected the client configuration (\(error.appleError ?? "configuration error")) "
                + "for client '\(clientID)': check the team ID, the key ID (kid), that the .p8 key is the one registered "
                + "for Sign in with Apple, and the client ID; then resume the job")
        case .permanent where error.appleError == "invalid_grant":
            return .succeeded(
                ResultRecord(Outcome.invalid, httpStatus: error.httpStatus, appleError: error.appleError, detail: detail,
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.invalidated",
                                   detail: jsonObject(["token_fingerprint": fingerprint, "apple_error": error.appleError])),
                effect: nil)
        case .permanent:
            return .failed(
                ResultRecord(Outcome.failed, httpStatus: error.httpStatus, appleError: error.appleError, detail: detail,
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.validation_failed",
                                   detail: jsonObject(["token_fingerprint": fingerprint, "apple_error": error.appleError])),
                effect: nil)
        case .transient:
            return .retry(
                error: error.description, retryAfter: error.retryAfter,
                result: ResultRecord(Outcome.discarded, httpStatus: error.httpStatus, appleError: error.appleError,
                                     detail: detail, tokenFingerprint: fingerprint))
        }
    }
}
