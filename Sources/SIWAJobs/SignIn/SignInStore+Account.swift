import Postgres
import SIWACrypto

extension SignInStore {
    /// A refresh token sealed by `TokenKeyring.seal`.
    typealias Sealed = (ciphertext: [UInt8], keyID: String)

    /// Creates or updates the account of an exchanged sign-in, seals its refresh token (AES-256-GCM
    /// bound to the account id, as `TokenKeyring` does everywhere) and records the outcome. The
    /// account is found by (team, `sub`), else through `transfer_sub` (`siwa.account_by_transfer_sub`:
    /// the recipient team's migrated account is linked; a sending team's account or a loaded
    /// hand-off row gives its `external_user_id` to the new account), else made with the submitted
    /// `external_user_id`, or the `sub` itself when none was given. Name, email and
    /// `is_private_email` change only when given; a sign-in clears `consent_revoked_at` and
    /// `deleted_at` (Apple authorized the user again).
    ///
    /// Two statements, no transaction: a lookup (the account's id, or a fresh one from the accounts'
    /// sequence, so the token can be sealed before anything is written), then one statement that
    /// locks the sign-in row while it is unprocessed, writes the account with its sealed token, the
    /// outcome, its audit row and the NOTIFY — all of it or nothing. An account made by a
    /// concurrent sign-in of the same user in between (the insert meets it) or gone (the update
    /// finds none) writes nothing and is `SignInRaceLost`.
    /// - Returns: the verdict written (`linked`, `created`), nil when the row was already processed.
    /// - Throws: `DatabaseError` (a unique violation on `accounts_external_key`: the
    ///   external_user_id belongs to another account), `CryptoError` from sealing, `SignInRaceLost`.
    func store(_ s: ExchangedSignIn, jobID: Int64, itemID: Int64, keyring: TokenKeyring) async throws -> SignInVerdict? {
        try await pool.withConnection { conn async throws -> SignInVerdict? in
            let row = s.row
            let found = try await conn.query("""
                SELECT (SELECT processed_at IS NOT NULL FROM siwa.sign_ins WHERE id = \(row.id)) AS done, a.id AS account_id,
                       CASE WHEN a.id IS NULL THEN nextval(pg_get_serial_sequence('siwa.accounts', 'id')) END AS fresh_id
                FROM (SELECT 1) one LEFT JOIN siwa.accounts a ON a.team_id = \(row.teamID) AND a.sub = \(s.sub)
                """)
            guard let first = found.first, try first.decode("done", as: Bool?.self) == false else { return nil }
            var verdict = s.verdict
            var existing: Int64? = try first.decode("account_id", as: Int64?.self)
            verdict.matchedVia = existing == nil ? "new" : "sub"
            var inherited: String?
            if existing == nil, let transferSub = s.transferSub, let match = try await conn.query("""
                SELECT account_id, external_user_id, team_id, matched_via
                FROM siwa.account_by_transfer_sub(\(row.teamID), \(transferSub)) LIMIT 1
                """).first {
                let via: String = try match.decode("matched_via")
                let team: String = try match.decode("team_id")
                verdict.matchedVia = "transfer_sub:" + via
                if via == "recipient", team == row.teamID {
                    existing = try match.decode("account_id", as: Int64?.self)
                } else {
                    inherited = try match.decode("external_user_id", as: String?.self)
                }
            }
            let fresh: Int64? = try first.decode("fresh_id", as: Int64?.self)
            guard let id = existing ?? fresh else { throw SignInRaceLost() }
            verdict.outcome = existing != nil || inherited != nil ? .linked : .created
            verdict.accountID = id
            verdict.sub = s.sub
            let sealed = try keyring.seal(s.refreshToken, accountAAD: String(id))
            verdict.refreshTokenFingerprint = keyring.fingerprint(s.refreshToken)
            let account = existing == nil
                ? Self.insertAccount(id: id, s, external: row.externalUserID ?? inherited, sealed: sealed, verdict: verdict)
                : Self.updateAccount(id: id, s, external: row.externalUserID, sealed: sealed, verdict: verdict)
            let written = try await conn.query(Self.writeAll(account: account, verdict, signInID: row.id, jobID: jobID, itemID: itemID))
            guard let result = written.first else { return nil }
            guard try result.decode("written", as: Bool.self) else {
                if try result.decode("pending", as: Bool.self) { throw SignInRaceLost() }
                return nil
            }
            verdict.accountEmail = try result.decode("account_email", as: String?.self)
            verdict.isPrivateEmail = try result.decode("is_private_email", as: Bool?.self)
            return verdict
        }
    }

    /// The new account with its sealed token, inserted only while the sign-in is `pending`; a
    /// concurrent sign-in's account with the same (team, `sub`) makes it insert nothing.
    private static func insertAccount(id: Int64, _ s: ExchangedSignIn, external: String?, sealed: Sealed,
                                      verdict: SignInVerdict) -> SQL {
        let row = s.row
        return """
            INSERT INTO siwa.accounts (id, external_user_id, team_id, client_id, sub, email, is_private_email, name, transfer_sub,
                                       refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint,
                                       token_status, token_checked_at)
            SELECT \(id), \(external ?? s.sub), \(row.teamID), \(row.clientID), \(s.sub), \(s.email ?? row.email),
                   COALESCE(\(s.isPrivateEmail), false), \(row.name), \(s.transferSub),
                   \(sealed.ciphertext), \(sealed.keyID), \(verdict.refreshTokenFingerprint), 'valid', NULL
            FROM pending
            ON CONFLICT (team_id, sub) DO NOTHING
            RETURNING id, email, is_private_email
            """
    }

    /// The existing account's new token and given fields, only while the sign-in is `pending`.
    private static func updateAccount(id: Int64, _ s: ExchangedSignIn, external: String?, sealed: Sealed,
                                      verdict: SignInVerdict) -> SQL {
        let row = s.row
        return """
            UPDATE siwa.accounts a
            SET sub = \(s.sub), client_id = \(row.clientID), external_user_id = COALESCE(\(external), a.external_user_id),
                email = COALESCE(\(s.email ?? row.email), a.email), is_private_email = COALESCE(\(s.isPrivateEmail), a.is_private_email),
                name = COALESCE(\(row.name), a.name), transfer_sub = COALESCE(\(s.transferSub), a.transfer_sub),
                consent_revoked_at = NULL, deleted_at = NULL, updated_at = now(),
                refresh_token_ciphertext = \(sealed.ciphertext), refresh_token_key_id = \(sealed.keyID),
                refresh_token_fingerprint = \(verdict.refreshTokenFingerprint), token_status = 'valid', token_checked_at = NULL
            FROM pending
            WHERE a.id = \(id)
            RETURNING a.id, a.email, a.is_private_email
            """
    }

    /// One statement: the sign-in row locked while unprocessed (`pending`), the account write,
    /// then the outcome (`finish`'s columns, with the account's email as stored), the audit row
    /// and the NOTIFY, only when the account was written. Answers one row: `pending`, `written`,
    /// and the stored `account_email` and `is_private_email`.
    private static func writeAll(account: SQL, _ v: SignInVerdict, signInID: Int64, jobID: Int64, itemID: Int64) -> SQL {
        """
        WITH pending AS (
            SELECT id FROM siwa.sign_ins WHERE id = \(signInID) AND processed_at IS NULL FOR UPDATE
        ), account AS (
        \(account)
        ), s AS (
            UPDATE siwa.sign_ins g
            SET outcome = \(v.outcome.rawValue), reason = \(v.reason), detail = \(v.detail), account_id = account.id,
                sub = \(v.sub), account_email = account.email, is_private_email = account.is_private_email,
                real_user_status = \(v.realUserStatus), matched_via = \(v.matchedVia),
                identity_token_fingerprint = \(v.identityTokenFingerprint), code_fingerprint = \(v.codeFingerprint),
                identity_token = NULL, authorization_code = NULL, nonce = NULL, processed_at = clock_timestamp()
            FROM account
            WHERE g.id = \(signInID)
            RETURNING g.id, g.outcome, g.account_id, g.account_email, g.is_private_email,
                      pg_notify(\(channel), jsonb_build_object('id', g.id, 'outcome', g.outcome)::text) AS notified
        ), audit AS (
            INSERT INTO siwa.audit_log (actor, action, job_id, item_id, account_id, detail)
            SELECT 'sign-in', 'sign_in.' || s.outcome, \(jobID), \(itemID), s.account_id, \(v.auditDetail(signInID: signInID))::jsonb
            FROM s
        )
        SELECT EXISTS (SELECT FROM pending) AS pending, s.id IS NOT NULL AS written, s.account_email, s.is_private_email
        FROM (SELECT 1) one LEFT JOIN s ON true
        """
    }
}
