import Foundation
import Postgres

/// `siwa-jobs accounts export`: the accounts of one team and client in the import's columns,
/// without tokens: `external_user_id,sub,email,is_private_email,token_checked_at` (CSV, RFC 4180
/// quoting, LF, UTF-8; or JSON lines). Deleted accounts are left out. Read in pages of 20,000 by
/// id and written as each page arrives, so memory stays flat whatever the table's size. The
/// output loads back with `accounts import` (changing nothing).
public struct AccountExporter: Sendable {
    let pool: PostgresPool
    static let pageSize = 20_000

    public enum Format: String, Sendable { case csv, jsonLines = "json-lines" }

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// - Parameter write: receives each page's bytes, in order (e.g. a file or standard output).
    /// - Returns: the number of accounts written.
    /// - Throws: `DatabaseError`; whatever `write` throws.
    public func export(teamID: String, clientID: String, format: Format,
                       write: ([UInt8]) throws -> Void) async throws -> Int {
        if format == .csv { try write(Array("external_user_id,sub,email,is_private_email,token_checked_at\n".utf8)) }
        var last: Int64 = 0
        var count = 0
        while true {
            let page = try await pool.query("""
                SELECT id, external_user_id, sub, email, is_private_email,
                       to_char(token_checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS checked_at
                FROM siwa.accounts
                WHERE team_id = \(teamID) AND client_id = \(clientID) AND deleted_at IS NULL AND id > \(last)
                ORDER BY id LIMIT \(Self.pageSize)
                """)
            if page.isEmpty { break }
            var out = ""
            for row in page {
                let user: String = try row.decode("external_user_id"), sub: String = try row.decode("sub")
                let email: String? = try row.decode("email"), isPrivate: Bool = try row.decode("is_private_email")
                let checked: String? = try row.decode("checked_at")
                switch format {
                case .csv:
                    out += [user, sub, email ?? "", isPrivate ? "true" : "false", checked ?? ""]
                        .map(TransferCSVExporter.field).joined(separator: ",") + "\n"
                case .jsonLines:
                    var object: [String: Any] = ["external_user_id": user, "sub": sub, "is_private_email": isPrivate]
                    if let email { object["email"] = email }
                    if let checked { object["token_checked_at"] = checked }
                    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                    out += String(decoding: data, as: UTF8.self) + "\n"
                }
                last = try row.decode("id")
            }
            try write(Array(out.utf8))
            count += page.count
        }
        return count
    }
}
