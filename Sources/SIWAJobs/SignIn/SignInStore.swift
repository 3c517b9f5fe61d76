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
