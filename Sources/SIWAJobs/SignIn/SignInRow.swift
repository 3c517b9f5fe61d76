import Foundation
import Postgres

/// One `siwa.sign_ins` row as the worker reads it. `identityToken`, `code` and `nonce` are
/// credentials: never logged, never in a result; the row loses them once processed.
struct SignInRow: Sendable {
    let id: Int64
    let teamID: String
    let clientID: String
    let identityToken: String?
    let code: String?
    let nonce: String?
    let nonceSHA256: String?
    let redirectURI: String?
    let name: String?
    let email: String?
    let externalUserID: String?
    /// The database's clock.
    let submittedAt: Date
    let processed: Bool

    static func load(_ ids: [Int64], pool: PostgresPool) async throws -> [Int64: SignInRow] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id, team_id, client_id, identity_token, authorization_code, nonce, nonce_sha256, redirect_uri, name,
                       email, external_user_id, submitted_at, processed_at IS NOT NULL AS processed
                FROM siwa.sign_ins WHERE id = ANY(\(ids))
                """)
        }
        var map: [Int64: SignInRow] = [:]
        for row in rows {
            let id: Int64 = try row.decode("id")
            map[id] = SignInRow(
                id: id, teamID: try row.decode("team_id"), clientID: try row.decode("client_id"),
                identityToken: try row.decode("identity_token", as: String?.self), code: try row.decode("authorization_code", as: String?.self),
                nonce: try row.decode("nonce", as: String?.self), nonceSHA256: try row.decode("nonce_sha256", as: String?.self),
                redirectURI: try row.decode("redirect_uri", as: String?.self), name: try row.decode("name", as: String?.self),
                email: try row.decode("email", as: String?.self), externalUserID: try row.decode("external_user_id", as: String?.self),
                submittedAt: try row.decode("submitted_at"), processed: try row.decode("processed"))
        }
        return map
    }

    /// The item payload's `sign_in_id`.
    static func id(inPayload payload: String?) -> Int64? {
        guard let payload, let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
              let number = object["sign_in_id"] as? NSNumber else { return nil }
        return number.int64Value
    }
}
