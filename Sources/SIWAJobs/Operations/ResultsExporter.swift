import Foundation
import Postgres

/// `siwa-jobs results export --job N`: a job's results, streamed in pages of `pageSize` by item id
/// (keyset, one short query each: no long transaction holds back `prune`), as CSV (RFC 4180,
/// header line, LF) or JSON lines. No secrets: tokens only as their fingerprints (`sha256:` + 16
/// hex), never a token, code, client secret or notification payload; `detail` is the result's
/// safe detail, as stored.
///
/// Fields: `item_id`, `account_id`, `external_user_id`, `outcome`, `http_status`, `apple_error`,
/// `token_fingerprint`, `attempt`, `created_at` (ISO 8601 UTC, microseconds), `detail` (JSON text).
public struct ResultsExporter: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case csv, jsonl
    }

    static let fields = ["item_id", "account_id", "external_user_id", "outcome", "http_status", "apple_error",
                         "token_fingerprint", "attempt", "created_at", "detail"]
    let pool: PostgresPool
    let pageSize: Int

    public init(pool: PostgresPool, pageSize: Int = 5_000) {
        self.pool = pool
        self.pageSize = pageSize
    }

    /// The distinct outcomes of `jobID`'s results, sorted (e.g. `["invalid", "valid"]`), or nil
    /// when no such job exists: checked before an export, so a mistyped job id is said as such
    /// rather than exported as an empty file.
    /// - Throws: `DatabaseError`.
    public func outcomes(jobID: Int64) async throws -> [String]? {
        let rows = try await pool.query("""
            SELECT EXISTS (SELECT FROM siwa.jobs WHERE id = \(jobID)) AS known,
                   ARRAY(SELECT DISTINCT outcome FROM siwa.results WHERE job_id = \(jobID) ORDER BY 1) AS outcomes
            """)
        guard let row = rows.first, try row.decode("known", as: Bool.self) else { return nil }
        return try row.decode("outcomes", as: [String].self)
    }

    /// Writes the results of `jobID` (only those with an outcome in `outcomes`, when not empty)
    /// to `handle`, in item order.
    /// - Returns: the rows written.
    /// - Throws: `DatabaseError`; file errors from `handle`.
    public func export(jobID: Int64, outcomes: [String], format: Format, to handle: FileHandle) async throws -> Int {
        if format == .csv { try handle.write(contentsOf: Data((Self.fields.joined(separator: ",") + "\n").utf8)) }
        var last = Int64.min, rows = 0
        while true {
            let page = try await pool.query("""
                SELECT r.item_id, r.item_id::text AS f_item_id, r.account_id::text AS f_account_id,
                       a.external_user_id AS f_external_user_id, r.outcome AS f_outcome, r.http_status::text AS f_http_status,
                       r.apple_error AS f_apple_error, r.token_fingerprint AS f_token_fingerprint, r.attempt::text AS f_attempt,
                       to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS f_created_at,
                       r.detail::text AS f_detail,
                       CASE WHEN \(format == .jsonl) THEN
                           jsonb_build_object('item_id', r.item_id, 'account_id', r.account_id, 'external_user_id', a.external_user_id,
                                              'outcome', r.outcome, 'http_status', r.http_status, 'apple_error', r.apple_error,
                                              'token_fingerprint', r.token_fingerprint, 'attempt', r.attempt,
                                              'created_at', to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                                              'detail', r.detail)::text
                       END AS line
                FROM siwa.results r LEFT JOIN siwa.accounts a ON a.id = r.account_id
                WHERE r.job_id = \(jobID) AND r.item_id > \(last)
                  AND (cardinality(\(outcomes)::text[]) = 0 OR r.outcome = ANY(\(outcomes)::text[]))
                ORDER BY r.item_id LIMIT \(pageSize)
                """)
            if page.isEmpty { break }
            var text = ""
            for row in page {
                if format == .jsonl {
                    text += try row.decode("line", as: String.self) + "\n"
                } else {
                    text += try Self.fields.map { try row.decode("f_" + $0, as: String?.self).map(TransferCSVExporter.field) ?? "" }
                        .joined(separator: ",") + "\n"
                }
                last = try row.decode("item_id")
            }
            try handle.write(contentsOf: Data(text.utf8))
            rows += page.count
        }
        return rows
    }
}
