import Foundation
import Postgres
import SIWACrypto

/// The `siwa.notifications` table seen from the receiver: stores each payload as received, once
/// per distinct payload, and reads the `jti` without verifying anything (verification happens when
/// the notification is processed, so a JWKS outage never loses a notification).
///
/// A duplicate is the same payload (same `jti` and same SHA-256 of the payload) stored before. A
/// different payload with a `jti` already stored is stored too: de-duplicating on the unverified
/// `jti` alone would let a forged payload posted first suppress the genuine one. Processing applies
/// at most one verified payload per `jti` (see `sql/0006_notification_fixes.sql`).
public struct NotificationInbox: Sendable {
    /// What `store` did.
    public enum Stored: Sendable, Equatable {
        /// A new row, committed.
        case stored(id: Int64)
        /// The same payload is already stored; nothing was written.
        case duplicate
    }

    /// Longest `jti` accepted, characters.
    public static let maxJTILength = 256

    let pool: PostgresPool
    /// Longest wait for the database per request, seconds (also the server-side `statement_timeout`).
    public let timeoutSeconds: Double

    /// - Parameters:
    ///   - pool: the receiver's own pool.
    ///   - timeoutSeconds: longest wait for the database per call, seconds (default 10).
    public init(pool: PostgresPool, timeoutSeconds: Double = 10) {
        self.pool = pool
        self.timeoutSeconds = timeoutSeconds
    }

    /// Inserts the payload (a compact JWT, unverified) and commits before returning.
    /// - Parameter jti: the payload's `jti`, from `unverifiedJTI`.
    /// - Throws: `DatabaseError` when the row could not be committed, `DeadlineExceeded` when the
    ///   database gave no answer within `timeoutSeconds` (answer 5xx so Apple retries).
    public func store(payload: String, jti: String) async throws -> Stored {
        let rows = try await withDatabase { conn in
            try await conn.query("""
                INSERT INTO siwa.notifications (payload, jti, payload_sha256)
                VALUES (\(payload), \(jti), sha256(convert_to(\(payload), 'UTF8')))
                ON CONFLICT (jti, payload_sha256) DO NOTHING
                RETURNING id
                """)
        }
        guard let row = rows.first else { return .duplicate }
        return .stored(id: try row.decode("id"))
    }

    /// The database answers within the deadline and accepts writes, for readiness checks.
    /// - Throws: `DatabaseError` (`DatabaseError.readOnly` for a hot standby or read-only
    ///   transactions) or `DeadlineExceeded`.
    public func ping() async throws {
        _ = try await withDatabase { conn in try await conn.requireWritable() }
    }

    /// Runs `body` in a transaction whose `statement_timeout` is `timeoutSeconds`, giving up after
    /// `timeoutSeconds` even if the database never answers (a frozen server or a full pool). The
    /// timeout is transaction-local (`set_config(…, true)`), so behind PgBouncer in transaction
    /// mode it neither leaks to other clients' server connections nor misses the statement.
    private func withDatabase<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let pool = self.pool
        let milliseconds = String(Int((timeoutSeconds * 1000).rounded()))
        return try await Deadline.run(seconds: timeoutSeconds, waitingFor: "database") {
            try await pool.withConnection { conn in
                try await conn.transaction { tx in
                    try await tx.query("SELECT set_config('statement_timeout', \(milliseconds), true)")
                    return try await body(tx)
                }
            }
        }
    }

    /// The `jti` claim of a compact JWS payload (RFC 7515 §7.1), read without verification; nil
    /// unless the token has three base64url segments (only the signature may be empty, as in an
    /// unsecured JWS; it is then rejected as `algNotAllowed` when processed), the first two decode
    /// to JSON objects, and the payload's `jti` is a non-empty string of at most `maxJTILength`
    /// characters without control characters (a NUL, which PostgreSQL text cannot hold, or a
    /// newline: the receiver answers 400).
    public static func unverifiedJTI(_ token: String) -> String? {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, !segments[0].isEmpty, !segments[1].isEmpty,
              segments.allSatisfy({ $0.utf8.count <= JWS.maxTokenBytes }),
              Base64URL.decode(String(segments[2])) != nil,
              let header = Base64URL.decode(String(segments[0])),
              (try? JSONSerialization.jsonObject(with: Data(header))) is [String: Any],
              let bytes = Base64URL.decode(String(segments[1])),
              let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let jti = object["jti"] as? String, !jti.isEmpty, jti.count <= maxJTILength,
              jti.unicodeScalars.allSatisfy({ $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) }) else { return nil }
        return jti
    }
}
