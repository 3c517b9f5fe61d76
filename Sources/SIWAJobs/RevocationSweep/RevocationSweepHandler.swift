import AppleID
import Clocks
import Postgres
import Queue
import SIWACrypto

/// Revocation sweep: `POST /auth/revoke` with `token_type_hint=refresh_token` for each account of
/// one team and client that is marked deleted or consent-revoked and still holds a refresh token
/// (TN3194; apple-api.md §3).
///
/// Apple answers 200 both for a token it revoked and for one that was never valid, so a 200 is
/// recorded as outcome `revoked_or_invalid` and nothing more is claimed. On 200 the stored token
/// is wiped in the completion statement (ciphertext and key id set NULL, `token_status` =
/// `revoked`; the fingerprint stays), only if the account still holds the token that was sent.
/// Other outcomes: `failed` (a permanent error such as `invalid_request`), `discarded` (transient
/// errors until attempts ran out), `no_token` (wiped meanwhile; nothing sent). Configuration
/// errors (`invalid_client`, ..., or a stored token that cannot be decrypted) pause the job.
public struct RevocationSweepHandler: JobHandler {
    public static let kind = "revocation-sweep"
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
        case revokedOrInvalid = "revoked_or_invalid", noToken = "no_token", failed, discarded
    }

    /// The effect payload: wipe the stored token, if the account still holds the one sent
    /// (`wipe_fingerprint`; absent when the stored token had no fingerprint).
    struct Effect: Encodable, Sendable {
        let wipe = "stored token"
        let wipeFingerprint: String?
        enum CodingKeys: String, CodingKey { case wipe, wipeFingerprint = "wipe_fingerprint" }
    }

    /// The effect its items' payloads feed, in the completion statement (see `CompletionEffect`),
    /// between the safety stop's steps.
    static let effect = CompletionEffect([safetyStop.counting, .init("applied_effects", unsafeSQL: """
        UPDATE siwa.accounts a
        SET refresh_token_ciphertext = NULL, refresh_token_key_id = NULL, token_status = 'revoked',
            token_checked_at = now(), updated_at = now()
        FROM done d
        WHERE a.id = d.account_id AND d.effect ? 'wipe'
          AND a.refresh_token_fingerprint IS NOT DISTINCT FROM d.effect->>'wipe_fingerprint'
        """)] + safetyStop.deciding)

    public var writes: KindWrites { .appleCalls(effect: Self.effect) }

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        try await StoredTokens.prepare(items, of: job, registry: registry, pool: pool, keyring: keyring, operation: Self.revoke)
    }

    static func revoke(item: ClaimedItem, stored: StoredTokens.Token?, client: AppleIDClient, keyring: TokenKeyring) async -> ItemOutcome {
        guard let accountID = item.accountID, let stored, stored.ciphertext != nil, stored.keyID != nil else {
            return .succeeded(ResultRecord(Outcome.noToken, detail: jsonObject(["reason": "account holds no stored refresh token"]),
                                           tokenFingerprint: stored?.fingerprint), audit: nil, effect: nil)
        }
        let token: String
        do { token = try StoredTokens.open(stored, accountID: accountID, keyring: keyring) } catch { return .pauseJob(reason: error.description) }
        let fingerprint = StoredTokens.keyedFingerprint(stored, token: token, keyring: keyring)
        do {
            try await client.revoke(token: token, hint: "refresh_token")
            let note = "Apple answered 200: the token is revoked or was already invalid"
            return .succeeded(
                ResultRecord(Outcome.revokedOrInvalid, httpStatus: 200, detail: jsonObject(["apple_answer": note]),
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.revoked_or_invalid",
                                   detail: jsonObject(["token_fingerprint": fingerprint, "apple_answer": note, "stored_token": "wiped"])),
                effect: EffectPayload(Effect(wipeFingerprint: stored.fingerprint)))
        } catch {
            if error.isCancellation { return .released }
            if error.neverReachedApple { return .unreachable(error: error.description) }   // uncharged (issue #8)
            if let reason = error.certificatePauseReason(calling: "Apple for client '\(client.clientID)' while revoking") {
                return .pauseJob(reason: reason)
            }
            let error = error.atAttempt(item.attempt)   // a non-JSON 4xx is retried once, then permanent
            let detail = jsonObject(["reason": error.detail])
            switch error.errorClass {
            case .configuration:
                return .pauseJob(reason: "Apple rejected the client configuration (\(error.appleError ?? "configuration error")) "
                    + "for client '\(client.clientID)' while revoking: check the team ID, the key ID (kid), the .p8 key "
                    + "and the client ID; then resume the job")
            case .permanent:
                return .failed(
                    ResultRecord(Outcome.failed, httpStatus: error.httpStatus, appleError: error.appleError, detail: detail,
                                 tokenFingerprint: fingerprint),
                    audit: AuditRecord(action: "token.revoke_failed",
                                       detail: jsonObject(["token_fingerprint": fingerprint, "apple_error": error.appleError])),
                    effect: refusalEffect(error))
            case .transient:
                return .retry(
                    error: error.description, retryAfter: error.retryAfter,
                    result: ResultRecord(Outcome.discarded, httpStatus: error.httpStatus, appleError: error.appleError,
                                         detail: detail, tokenFingerprint: fingerprint))
            }
        }
    }
}
