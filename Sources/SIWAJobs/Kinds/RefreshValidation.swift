import AppleID
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

    public var effectSQL: String? {
        """
        UPDATE siwa.accounts a
        SET token_status = d.effect->>'token_status', token_checked_at = now(), updated_at = now()
        FROM done d
        WHERE a.id = d.account_id AND d.effect ? 'token_status'
        """
    }

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        let spec: JobSpec
        do { spec = try JobSpec(json: job.spec) } catch {
            let reason = "\(error)"
            return items.map { _ in { .pauseJob(reason: reason) } }
        }
        let teamID = spec.fields["team_id"] ?? "", clientID = spec.fields["client_id"] ?? ""
        guard let client = registry.client(teamID: teamID, clientID: clientID) else {
            let reason = "no Apple credentials configured for team '\(teamID)' and client '\(clientID)': "
                + "set SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_KEY_FILE and SIWA_CLIENT_ID for this worker"
            return items.map { _ in { .pauseJob(reason: reason) } }
        }
        let tokens = try await loadTokens(items.compactMap(\.accountID))
        let keyring = self.keyring
        return items.map { item in
            let stored = item.accountID.flatMap { tokens[$0] }
            return { await Self.validate(item: item, stored: stored, client: client, keyring: keyring) }
        }
    }

    struct StoredToken: Sendable {
        let ciphertext: [UInt8]?
        let keyID: String?
        let fingerprint: String?
    }

    private func loadTokens(_ accountIDs: [Int64]) async throws -> [Int64: StoredToken] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id, refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint
                FROM siwa.accounts WHERE id = ANY(\(accountIDs))
                """)
        }
        var map: [Int64: StoredToken] = [:]
        for row in rows {
            map[try row.decode("id")] = StoredToken(
                ciphertext: try row.decode("refresh_token_ciphertext", as: [UInt8]?.self),
                keyID: try row.decode("refresh_token_key_id", as: String?.self),
                fingerprint: try row.decode("refresh_token_fingerprint", as: String?.self))
        }
        return map
    }

    static func validate(item: ClaimedItem, stored: StoredToken?, client: AppleIDClient, keyring: TokenKeyring) async -> ItemOutcome {
        guard let accountID = item.accountID, let stored, let ciphertext = stored.ciphertext, let keyID = stored.keyID else {
            return .failed(ResultRecord(outcome: "failed", detail: jsonObject(["reason": "account has no stored refresh token"])),
                           audit: nil, effect: nil)
        }
        let token: String
        do {
            token = try keyring.open(ciphertext, keyID: keyID, accountAAD: String(accountID))
        } catch {
            // A wrong or missing token key would fail every item the same way: that is a
            // configuration error, so the job pauses instead of failing the whole night's run.
            return .pauseJob(reason: "stored refresh tokens cannot be decrypted (account \(accountID), key id '\(keyID)'): \(error); "
                + "check SIWA_TOKEN_KEY / SIWA_TOKEN_KEY_FILE, SIWA_TOKEN_KEY_ID and SIWA_TOKEN_KEYS_PREVIOUS, then resume the job")
        }
        let fingerprint = stored.fingerprint ?? Fingerprint.of(token)
        switch await client.validateRefreshToken(token) {
        case .success:
            return .succeeded(
                ResultRecord(outcome: "valid", httpStatus: 200, tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.validated", detail: jsonObject(["token_fingerprint": fingerprint])),
                effect: jsonObject(["token_status": "valid"]))
        case let .failure(error):
            return outcome(for: error, fingerprint: fingerprint, clientID: client.clientID)
        }
    }

    static func outcome(for error: AppleIDError, fingerprint: String, clientID: String) -> ItemOutcome {
        if error.isCancellation { return .released }   // shutdown: not the item's fault, no attempt charged
        let detail = jsonObject(["reason": error.detail])
        switch error.errorClass {
        case .configuration:
            return .pauseJob(reason: "Apple rejected the client configuration (\(error.appleError ?? "configuration error")) "
                + "for client '\(clientID)': check the team ID, the key ID (kid), that the .p8 key is the one registered "
                + "for Sign in with Apple, and the client ID; then resume the job")
        case .permanent where error.appleError == "invalid_grant":
            return .succeeded(
                ResultRecord(outcome: "invalid", httpStatus: error.httpStatus, appleError: error.appleError, detail: detail,
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.invalidated",
                                   detail: jsonObject(["token_fingerprint": fingerprint, "apple_error": error.appleError])),
                effect: jsonObject(["token_status": "invalid"]))
        case .permanent:
            return .failed(
                ResultRecord(outcome: "failed", httpStatus: error.httpStatus, appleError: error.appleError, detail: detail,
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.validation_failed",
                                   detail: jsonObject(["token_fingerprint": fingerprint, "apple_error": error.appleError])),
                effect: nil)
        case .transient:
            return .retry(
                error: error.description, retryAfterSeconds: error.retryAfterSeconds,
                result: ResultRecord(outcome: "discarded", httpStatus: error.httpStatus, appleError: error.appleError,
                                     detail: detail, tokenFingerprint: fingerprint))
        }
    }
}
