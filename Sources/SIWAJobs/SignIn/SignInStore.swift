import Postgres
import SIWACrypto

/// The sign-in kind's writes. Each sign-in's outcome is written once, by the statement that also
/// wipes its code, identity token and nonce, writes its audit row and sends
/// `NOTIFY siwa_sign_ins` with `{"id": N, "outcome": "..."}`; a row already processed is left
/// alone (at most one outcome, even if two attempts of one item ran).
struct SignInStore: Sendable {
    /// The channel the outcome NOTIFY goes to.
    static let channel = "siwa_sign_ins"

    let pool: PostgresPool

    /// Records a verdict that changes no account (a rejection or an error).
    /// - Returns: false when the row was already processed.
    /// - Throws: `DatabaseError`.
    func record(_ verdict: SignInVerdict, signInID: Int64, jobID: Int64, itemID: Int64) async throws -> Bool {
        try await pool.withConnection { conn in
            try await Self.finish(verdict, signInID: signInID, jobID: jobID, itemID: itemID, on: conn)
        }
    }

    /// The outcome statement (see the type's comment), on `conn` (inside the caller's transaction
    /// when there is one).
    static func finish(_ v: SignInVerdict, signInID: Int64, jobID: Int64, itemID: Int64, on conn: PostgresConnection) async throws -> Bool {
        let rows = try await conn.query("""
            WITH s AS (
                UPDATE siwa.sign_ins
                SET outcome = \(v.outcome.rawValue), reason = \(v.reason), detail = \(v.detail), account_id = \(v.accountID),
                    sub = \(v.sub), account_email = \(v.accountEmail), is_private_email = \(v.isPrivateEmail),
                    real_user_status = \(v.realUserStatus), matched_via = \(v.matchedVia),
                    identity_token_fingerprint = \(v.identityTokenFingerprint), code_fingerprint = \(v.codeFingerprint),
                    identity_token = NULL, authorization_code = NULL, nonce = NULL, processed_at = clock_timestamp()
                WHERE id = \(signInID) AND processed_at IS NULL
                RETURNING id, outcome, account_id
            ), audit AS (
                INSERT INTO siwa.audit_log (actor, action, job_id, item_id, account_id, detail)
                SELECT 'sign-in', 'sign_in.' || s.outcome, \(jobID), \(itemID), s.account_id, \(v.auditDetail(signInID: signInID))::jsonb
                FROM s
            )
            SELECT pg_notify(\(channel), jsonb_build_object('id', s.id, 'outcome', s.outcome)::text) FROM s
            """)
        return !rows.isEmpty
    }
}

/// What a successful exchange hands the store.
struct ExchangedSignIn: Sendable {
    let row: SignInRow
    let sub: String
    let email: String?
    let isPrivateEmail: Bool?
    let transferSub: String?
    let refreshToken: String
    var verdict: SignInVerdict
}

/// The account lookup of a sign-in raced another sign-in of the same user; the transaction is
/// rolled back and run again (it then finds the account).
struct SignInRaceLost: Error {}

extension SignInStore {
    /// Creates or updates the account of an exchanged sign-in, seals its refresh token (AES-256-GCM
    /// bound to the account id, as `TokenKeyring` does everywhere) and records the outcome, in one
    /// transaction. The account is found by (team, `sub`), else through `transfer_sub`
    /// (`siwa.account_by_transfer_sub`: the recipient team's migrated account is linked; a sending
    /// team's account or a loaded hand-off row gives its `external_user_id` to the new account),
    /// else made with the submitted `external_user_id`, or the `sub` itself when none was given.
    /// Name, email and `is_private_email` change only when given; a sign-in clears
    /// `consent_revoked_at` and `deleted_at` (Apple authorized the user again).
    /// - Returns: the verdict written (`linked`, `created`), nil when the row was already processed.
    /// - Throws: `DatabaseError` (a unique violation on `accounts_external_key`: the
    ///   external_user_id belongs to another account), `CryptoError` from sealing, `SignInRaceLost`.
    func store(_ s: ExchangedSignIn, jobID: Int64, itemID: Int64, keyring: TokenKeyring) async throws -> SignInVerdict? {
        try await pool.withConnection { conn async throws -> SignInVerdict? in
            try await conn.transaction { tx async throws -> SignInVerdict? in
                let row = s.row
                let locked = try await tx.query("SELECT processed_at IS NOT NULL AS done FROM siwa.sign_ins WHERE id = \(row.id) FOR UPDATE")
                guard let first = locked.first, try !first.decode("done", as: Bool.self) else { return nil }
                var verdict = s.verdict
                var accountID: Int64? = try await tx.query("""
                    SELECT id FROM siwa.accounts WHERE team_id = \(row.teamID) AND sub = \(s.sub) FOR UPDATE
                    """).first?.decode("id")
                verdict.matchedVia = accountID == nil ? "new" : "sub"
                var inherited: String?
                if accountID == nil, let transferSub = s.transferSub {
                    if let match = try await tx.query("""
                        SELECT account_id, external_user_id, team_id, matched_via
                        FROM siwa.account_by_transfer_sub(\(row.teamID), \(transferSub)) LIMIT 1
                        """).first {
                        let via: String = try match.decode("matched_via")
                        let team: String = try match.decode("team_id")
                        verdict.matchedVia = "transfer_sub:" + via
                        if via == "recipient", team == row.teamID {
                            accountID = try match.decode("account_id", as: Int64?.self)
                        } else {
                            inherited = try match.decode("external_user_id", as: String?.self)
                        }
                    }
                }
                let external = row.externalUserID ?? inherited
                let email = s.email ?? row.email
                if let id = accountID {
                    try await tx.execute("""
                        UPDATE siwa.accounts
                        SET sub = \(s.sub), client_id = \(row.clientID), external_user_id = COALESCE(\(external), external_user_id),
                            email = COALESCE(\(email), email), is_private_email = COALESCE(\(s.isPrivateEmail), is_private_email),
                            name = COALESCE(\(row.name), name), transfer_sub = COALESCE(\(s.transferSub), transfer_sub),
                            consent_revoked_at = NULL, deleted_at = NULL, updated_at = now()
                        WHERE id = \(id)
                        """)
                    verdict.outcome = .linked
                } else {
                    let inserted = try await tx.query("""
                        INSERT INTO siwa.accounts (external_user_id, team_id, client_id, sub, email, is_private_email, name, transfer_sub)
                        VALUES (\(external ?? s.sub), \(row.teamID), \(row.clientID), \(s.sub), \(email),
                                COALESCE(\(s.isPrivateEmail), false), \(row.name), \(s.transferSub))
                        ON CONFLICT (team_id, sub) DO NOTHING
                        RETURNING id
                        """)
                    guard let id: Int64 = try inserted.first?.decode("id") else { throw SignInRaceLost() }
                    accountID = id
                    verdict.outcome = inherited == nil ? .created : .linked
                }
                guard let id = accountID else { throw SignInRaceLost() }
                let sealed = try keyring.seal(s.refreshToken, accountAAD: String(id))
                let fingerprint = keyring.fingerprint(s.refreshToken)
                let account = try await tx.query("""
                    UPDATE siwa.accounts
                    SET refresh_token_ciphertext = \(sealed.ciphertext), refresh_token_key_id = \(sealed.keyID),
                        refresh_token_fingerprint = \(fingerprint), token_status = 'valid', token_checked_at = NULL
                    WHERE id = \(id)
                    RETURNING email, is_private_email
                    """)
                verdict.accountID = id
                verdict.sub = s.sub
                verdict.refreshTokenFingerprint = fingerprint
                verdict.accountEmail = try account.first?.decode("email", as: String?.self)
                verdict.isPrivateEmail = try account.first?.decode("is_private_email", as: Bool?.self)
                guard try await Self.finish(verdict, signInID: row.id, jobID: jobID, itemID: itemID, on: tx) else { return nil }
                return verdict
            }
        }
    }
}
