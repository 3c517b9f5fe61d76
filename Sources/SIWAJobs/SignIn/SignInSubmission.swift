import Clocks
import Foundation
import Postgres

/// One sign-in as an app backend submits it (`siwa.submit_sign_in`). The identity token and the
/// code are credentials: `description` shows neither.
public struct SignInRequest: Sendable, CustomStringConvertible {
    public var teamID: String
    public var clientID: String
    public var identityToken: String
    public var code: String
    /// The raw nonce, or (`nonceSHA256`) its SHA-256 hex; not both.
    public var nonce: String?
    public var nonceSHA256: String?
    public var redirectURI: String?
    public var name: String?
    public var email: String?
    public var externalUserID: String?

    public init(teamID: String, clientID: String, identityToken: String, code: String, nonce: String? = nil,
                nonceSHA256: String? = nil, redirectURI: String? = nil) {
        self.teamID = teamID
        self.clientID = clientID
        self.identityToken = identityToken
        self.code = code
        self.nonce = nonce
        self.nonceSHA256 = nonceSHA256
        self.redirectURI = redirectURI
    }

    public var description: String { "SignInRequest(team: \(teamID), client: \(clientID))" }
}

/// A processed sign-in as the app reads it (`siwa.sign_in_outcomes`).
public struct SignInResult: Sendable, Equatable {
    public let id: Int64
    /// `linked`, `created`, `identity_token_rejected`, `code_rejected`, `configuration_error`, `conflict`.
    public let outcome: String
    public let reason: String?
    public let detail: String?
    public let accountID: Int64?
    public let sub: String?
    public let email: String?
    public let isPrivateEmail: Bool?

    /// `created account 12 (sub ..., email ..., private relay)` or `identity_token_rejected: nonce_mismatch (...)`.
    public var line: String {
        switch outcome {
        case "linked", "created":
            let privacy = isPrivateEmail == true ? ", private relay" : ""
            return "\(outcome) account \(accountID.map(String.init) ?? "?") (sub \(sub ?? "?"), email \(email ?? "none")\(privacy))"
        default:
            return "\(outcome): \(reason ?? "unknown")" + (detail.map { " (\($0))" } ?? "")
        }
    }
}

/// Submits sign-ins and reads their outcomes, as an app backend would through PostgreSQL.
public struct SignInSubmitter: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Calls `siwa.submit_sign_in` (which wakes the workers).
    /// - Returns: the sign-in's id.
    /// - Throws: `DatabaseError` (SQLSTATE 22023 naming a missing or malformed parameter).
    public func submit(_ r: SignInRequest) async throws -> Int64 {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT siwa.submit_sign_in(\(r.teamID), \(r.clientID), \(r.identityToken), \(r.code), \(r.nonce), \(r.nonceSHA256),
                                           \(r.redirectURI), \(r.name), \(r.email), \(r.externalUserID)) AS id
                """)
        }
        guard let id: Int64 = try rows.first?.decode("id") else {
            throw DatabaseError(kind: .query, message: "siwa.submit_sign_in returned no id")
        }
        return id
    }

    /// The outcome of sign-in `id`; nil while it is not processed.
    /// - Throws: `DatabaseError`.
    public func result(id: Int64) async throws -> SignInResult? {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id, outcome, reason, detail, account_id, sub, account_email, is_private_email
                FROM siwa.sign_in_outcomes WHERE id = \(id) AND processed_at IS NOT NULL
                """)
        }
        guard let row = rows.first else { return nil }
        return SignInResult(id: try row.decode("id"), outcome: try row.decode("outcome"), reason: try row.decode("reason", as: String?.self),
                            detail: try row.decode("detail", as: String?.self), accountID: try row.decode("account_id", as: Int64?.self),
                            sub: try row.decode("sub", as: String?.self), email: try row.decode("account_email", as: String?.self),
                            isPrivateEmail: try row.decode("is_private_email", as: Bool?.self))
    }

    /// Where an app (or an operator) reads the outcome of sign-in `id` later, when `wait` gave up:
    /// the query on the inbox's outcome view.
    public static func outcomeQuery(id: Int64) -> String {
        "SELECT outcome FROM siwa.sign_in_outcomes WHERE id = \(id)"
    }

    /// Waits for sign-in `id`'s outcome, polling every 50 ms (an app would LISTEN on
    /// `siwa_sign_ins` instead), for at most `timeout`.
    /// - Returns: nil when no outcome arrived in time (no worker running, or the job is paused).
    /// - Throws: `DatabaseError`.
    public func wait(id: Int64, timeout: Duration, clock: any WallClock) async throws -> SignInResult? {
        let deadline = clock.now.addingTimeInterval(timeout.seconds)
        while true {
            if let result = try await result(id: id) { return result }
            if clock.now >= deadline { return nil }
            try await clock.sleep(for: .milliseconds(50))
        }
    }
}
