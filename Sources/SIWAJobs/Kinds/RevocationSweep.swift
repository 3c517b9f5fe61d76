import AppleID
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

    public var effectSQL: String? {
        """
        UPDATE siwa.accounts a
        SET refresh_token_ciphertext = NULL, refresh_token_key_id = NULL, token_status = 'revoked',
            token_checked_at = now(), updated_at = now()
        FROM done d
        WHERE a.id = d.account_id AND d.effect ? 'wipe'
          AND a.refresh_token_fingerprint IS NOT DISTINCT FROM d.effect->>'wipe_fingerprint'
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
        let tokens = try await StoredTokens.load(items.compactMap(\.accountID), pool: pool)
        let keyring = self.keyring
        return items.map { item in
            let stored = item.accountID.flatMap { tokens[$0] }
            return { await Self.revoke(item: item, stored: stored, client: client, keyring: keyring) }
        }
    }

    static func revoke(item: ClaimedItem, stored: StoredTokens.Token?, client: AppleIDClient, keyring: TokenKeyring) async -> ItemOutcome {
        guard let accountID = item.accountID, let stored, let ciphertext = stored.ciphertext, let keyID = stored.keyID else {
            return .succeeded(ResultRecord(outcome: "no_token", detail: jsonObject(["reason": "account holds no stored refresh token"]),
                                           tokenFingerprint: stored?.fingerprint), audit: nil, effect: nil)
        }
        let token: String
        do {
            token = try keyring.open(ciphertext, keyID: keyID, accountAAD: String(accountID))
        } catch {
            // A wrong or missing token key fails every item alike: a configuration error (as in
            // refresh validation), so the job pauses rather than failing the sweep item by item.
            return .pauseJob(reason: "stored refresh tokens cannot be decrypted (account \(accountID), key id '\(keyID)'): \(error); "
                + "check SIWA_TOKEN_KEY / SIWA_TOKEN_KEY_FILE, SIWA_TOKEN_KEY_ID and SIWA_TOKEN_KEYS_PREVIOUS, then resume the job")
        }
        let fingerprint = stored.fingerprint ?? Fingerprint.of(token)
        switch await client.revoke(token: token, hint: "refresh_token") {
        case .success:
            let note = "Apple answered 200: the token is revoked or was already invalid"
            return .succeeded(
                ResultRecord(outcome: "revoked_or_invalid", httpStatus: 200, detail: jsonObject(["apple_answer": note]),
                             tokenFingerprint: fingerprint),
                audit: AuditRecord(action: "token.revoked_or_invalid",
                                   detail: jsonObject(["token_fingerprint": fingerprint, "apple_answer": note, "stored_token": "wiped"])),
                effect: jsonObject(["wipe": "stored token", "wipe_fingerprint": stored.fingerprint]))
        case let .failure(error):
            if error.isCancellation { return .released }
            let detail = jsonObject(["reason": error.detail])
            switch error.errorClass {
            case .configuration:
                return .pauseJob(reason: "Apple rejected the client configuration (\(error.appleError ?? "configuration error")) "
                    + "for client '\(client.clientID)' while revoking: check the team ID, the key ID (kid), the .p8 key "
                    + "and the client ID; then resume the job")
            case .permanent:
                return .failed(
                    ResultRecord(outcome: "failed", httpStatus: error.httpStatus, appleError: error.appleError, detail: detail,
                                 tokenFingerprint: fingerprint),
                    audit: AuditRecord(action: "token.revoke_failed",
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
}

/// Encrypted refresh tokens of a batch of accounts, loaded in one round trip.
enum StoredTokens {
    struct Token: Sendable {
        let ciphertext: [UInt8]?
        let keyID: String?
        let fingerprint: String?
    }

    static func load(_ accountIDs: [Int64], pool: PostgresPool) async throws -> [Int64: Token] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id, refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint
                FROM siwa.accounts WHERE id = ANY(\(accountIDs))
                """)
        }
        var map: [Int64: Token] = [:]
        for row in rows {
            map[try row.decode("id")] = Token(
                ciphertext: try row.decode("refresh_token_ciphertext", as: [UInt8]?.self),
                keyID: try row.decode("refresh_token_key_id", as: String?.self),
                fingerprint: try row.decode("refresh_token_fingerprint", as: String?.self))
        }
        return map
    }
}
