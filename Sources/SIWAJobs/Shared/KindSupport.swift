import AppleID
import Postgres
import Queue
import SIWACore
import SIWACrypto

/// One pause reason for every item of a batch (configuration errors stop the job, not the items).
func pauseAll(_ items: [ClaimedItem], reason: String) -> [@Sendable () async -> ItemOutcome] {
    items.map { _ in { .pauseJob(reason: reason) } }
}

extension AppleClientRegistry {
    /// The client for a job's team and client.
    /// - Throws: `ConfigurationError` whose description is the pause reason that tells ops what
    ///   to configure.
    func client(forJob teamID: String, clientID: String) throws(ConfigurationError) -> AppleIDClient {
        guard let client = client(teamID: teamID, clientID: clientID) else {
            throw ConfigurationError("no Apple credentials configured for team '\(teamID)' and client '\(clientID)': "
                + "add the team to SIWA_TEAMS_FILE (or set SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_KEY_FILE, SIWA_CLIENT_ID) for this worker")
        }
        return client
    }
}

/// Encrypted refresh tokens of a batch of accounts, loaded in one round trip.
enum StoredTokens {
    /// One account's stored token. `description` shows which parts are present, never the token.
    struct Token: Sendable, CustomStringConvertible, CustomReflectable {
        let ciphertext: [UInt8]?
        let keyID: String?
        let fingerprint: String?
        /// The decrypted token, once `prepare` has opened it (so an item does not decrypt it again).
        var plaintext: String? = nil

        var description: String {
            "StoredToken(ciphertext: \(ciphertext == nil ? "absent" : "present"), key_id: \(keyID ?? "none"), "
                + "opened: \(plaintext != nil))"
        }

        var customMirror: Mirror { Mirror(self, children: ["description": description]) }
    }

    /// The stored tokens of `accountIDs` (absent accounts are absent from the map), in one statement.
    ///
    /// A batch whose ids lie close together (`denseSpan`), as a range claim's planned items do, is
    /// read by one scan of the key over its span, semi-joined to the list by hash (`id + 0` keeps
    /// the list out of the index condition): PostgreSQL 15 otherwise descends the key once per id,
    /// which cost about 2.5 µs and 2.5 buffer hits per account (`pg_stat_statements`, README "Cost
    /// per item"). The list is a hashed `IN (SELECT unnest(...))`, not `= ANY(...)`: in the generic
    /// plan a prepared statement settles on, `= ANY` of a parameter compares each scanned row with
    /// the list's elements one by one (O(batch²) per statement; 0.30 against 0.18 ms for 250
    /// accounts, `EXPLAIN ANALYZE`). Scattered ids (a retry's, a notification's) keep the per-id
    /// lookups, so a batch never reads more than twice its own number of accounts.
    /// - Throws: `DatabaseError`.
    static func load(_ accountIDs: [Int64], pool: PostgresPool) async throws -> [Int64: Token] {
        guard !accountIDs.isEmpty else { return [:] }
        let filter: SQL = denseSpan(accountIDs).map { span in
            "id BETWEEN \(span.lowerBound) AND \(span.upperBound) AND id + 0 IN (SELECT unnest(\(accountIDs)::bigint[]))"
        } ?? "id = ANY(\(accountIDs))"
        let statement: SQL = "SELECT id, refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint "
            + "FROM siwa.accounts WHERE " + filter
        let rows = try await pool.withConnection { conn in try await conn.query(statement.reusingPlan()) }
        var map: [Int64: Token] = [:]
        for row in rows {
            map[try row.decode("id")] = Token(
                ciphertext: try row.decode("refresh_token_ciphertext", as: [UInt8]?.self),
                keyID: try row.decode("refresh_token_key_id", as: String?.self),
                fingerprint: try row.decode("refresh_token_fingerprint", as: String?.self))
        }
        return map
    }

    /// The span of `ids` (lowest...highest) when it holds at most twice as many ids as `ids` has,
    /// else nil (also for an empty list).
    static func denseSpan(_ ids: [Int64]) -> ClosedRange<Int64>? {
        guard let low = ids.min(), let high = ids.max() else { return nil }
        let (width, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, width < 2 * Int64(ids.count) else { return nil }
        return low...high
    }
}

extension StoredTokens {
    /// Decrypts a stored token. A token that does not decrypt means a wrong or missing token key,
    /// which would fail every item alike.
    /// - Throws: `ConfigurationError` whose description is the pause reason.
    static func open(_ stored: Token, accountID: Int64, keyring: TokenKeyring) throws(ConfigurationError) -> String {
        if let plaintext = stored.plaintext { return plaintext }
        guard let ciphertext = stored.ciphertext, let keyID = stored.keyID else {
            throw ConfigurationError("account \(accountID) holds no stored refresh token")
        }
        do {
            return try keyring.open(ciphertext, keyID: keyID, accountAAD: String(accountID))
        } catch {
            throw ConfigurationError(
                "stored refresh tokens cannot be decrypted (account \(accountID), key id '\(keyID)'): \(error); "
                    + "check SIWA_TOKEN_KEY / SIWA_TOKEN_KEY_FILE, SIWA_TOKEN_KEY_ID and SIWA_TOKEN_KEYS_PREVIOUS, then resume the job")
        }
    }
}

extension StoredTokens {
    /// The token's keyed fingerprint (`TokenKeyring.fingerprint`): the stored one when it is keyed
    /// already, else computed (a row fingerprinted with plain SHA-256 before keyed fingerprints;
    /// `tokens rekey` rewrites those).
    static func keyedFingerprint(_ stored: Token, token: String, keyring: TokenKeyring) -> String {
        if let fingerprint = stored.fingerprint, fingerprint.hasPrefix(FingerprintKey.prefix) { return fingerprint }
        return keyring.fingerprint(token)
    }
}

extension StoredTokens {
    /// Prepares a batch of a kind that calls Apple with each account's stored refresh token: the
    /// job spec names the team and client (a missing client pauses the job), the tokens are loaded
    /// in one round trip, and `operation` runs per item.
    static func prepare(
        _ items: [ClaimedItem], of job: JobRecord, registry: AppleClientRegistry, pool: PostgresPool, keyring: TokenKeyring,
        operation: @escaping @Sendable (ClaimedItem, Token?, AppleIDClient, TokenKeyring) async -> ItemOutcome
    ) async throws -> [@Sendable () async -> ItemOutcome] {
        let spec: ClientJobSpec
        do { spec = try ClientJobSpec.decode(job.spec) } catch { return pauseAll(items, reason: "\(error)") }
        let client: AppleIDClient
        do {
            client = try registry.client(forJob: spec.teamID, clientID: spec.clientID)
        } catch {
            return pauseAll(items, reason: error.description)
        }
        var tokens = try await load(items.compactMap(\.accountID), pool: pool)
        // A token key that is missing or wrong fails every token alike: that pauses the job. One
        // token that does not decrypt among others that do is that account's problem (corrupt
        // or tampered): only its item fails. Each token is decrypted here, once: the item's
        // `operation` gets it opened (`Token.plaintext`).
        var unreadable: [Int64: ConfigurationError] = [:]
        var present = 0
        for (accountID, token) in tokens where token.ciphertext != nil {
            present += 1
            do {
                tokens[accountID]?.plaintext = try open(token, accountID: accountID, keyring: keyring)
            } catch {
                if let keyID = token.keyID, !keyring.knows(keyID: keyID) { return pauseAll(items, reason: error.description) }
                unreadable[accountID] = error
            }
        }
        if present >= 2 && unreadable.count == present, let first = unreadable.values.first {
            return pauseAll(items, reason: first.description)
        }
        return items.map { item in
            let stored = item.accountID.flatMap { tokens[$0] }
            if let accountID = item.accountID, unreadable[accountID] != nil {
                return {
                    .failed(ResultRecord(.failed, detail: jsonObject([
                        "reason": "the stored refresh token does not decrypt (corrupt or tampered); other accounts' tokens do"]),
                        tokenFingerprint: stored?.fingerprint), audit: nil, effect: nil)
                }
            }
            return { await operation(item, stored, client, keyring) }
        }
    }
}
