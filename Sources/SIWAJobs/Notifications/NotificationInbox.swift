import Foundation
import Postgres
import SIWACrypto

/// The `siwa.notifications` table seen from the receiver: stores each payload as received, once
/// per `jti`, and reads the `jti` without verifying anything (verification happens when the
/// notification is processed, so a JWKS outage never loses a notification).
public struct NotificationInbox: Sendable {
    /// What `store` did.
    public enum Stored: Sendable, Equatable {
        /// A new row, committed.
        case stored(id: Int64)
        /// A row with this `jti` already exists; nothing was written.
        case duplicate
    }

    /// Longest `jti` used for de-duplication; longer ones are stored as NULL (never de-duplicated).
    public static let maxJTILength = 256

    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Inserts the payload (a compact JWT, unverified) and commits before returning.
    /// - Throws: `DatabaseError` when the row could not be committed (answer 5xx so Apple retries).
    public func store(payload: String) async throws -> Stored {
        let jti = Self.unverifiedJTI(payload)
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                INSERT INTO siwa.notifications (payload, jti) VALUES (\(payload), \(jti))
                ON CONFLICT (jti) DO NOTHING
                RETURNING id
                """)
        }
        guard let row = rows.first else { return .duplicate }
        return .stored(id: try row.decode("id"))
    }

    /// The `jti` claim of a compact JWS payload, read without verification; nil when the token
    /// does not have three segments, its payload is not base64url JSON, or `jti` is not a
    /// non-empty string of at most `maxJTILength` characters.
    public static func unverifiedJTI(_ token: String) -> String? {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, segments[1].utf8.count <= 64 * 1024,
              let bytes = Base64URL.decode(String(segments[1])),
              let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let jti = object["jti"] as? String, !jti.isEmpty, jti.count <= maxJTILength else { return nil }
        return jti
    }
}
