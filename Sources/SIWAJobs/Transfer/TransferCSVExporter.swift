import Foundation
import Postgres
import SIWACore

/// What `TransferCSVExporter.write` wrote.
public struct TransferExportFile: Sendable {
    public let rows: Int
    /// Accounts Apple refused (no transfer_sub), not in the file.
    public let refused: Int
    /// Accounts of the client with no outcome yet for this target (export incomplete).
    public let missing: Int
    public let target: String
}

/// Writes the hand-off file for the recipient team: header `external_user_id,transfer_sub`, one
/// line per account of the export job's team and client with a `transfer_sub` for its target (from
/// this and earlier export runs). Per Apple's guidance (TN3159) it holds neither the team-scoped
/// `sub` nor any email. LF line endings, RFC 4180 quoting, UTF-8 without byte-order mark. Read in
/// pages of 20,000 accounts; written to a private `FILE.partial-<pid>-<random>` and then published (link, or rename with
/// `--force`), so a reader never sees half a file.
public struct TransferCSVExporter: Sendable {
    let pool: PostgresPool
    static let pageSize = 20_000

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// - Parameters:
    ///   - allowIncomplete: write even when some accounts have no outcome yet.
    ///   - overwrite: replace an existing regular file at `path` (never a directory).
    /// - Throws: `EnqueueError` when `path` is a directory or an existing file (without
    ///   `overwrite`), when the job is not an export, or is incomplete and `allowIncomplete` is
    ///   false; file-system errors.
    public func write(jobID: Int64, to path: String, allowIncomplete: Bool = false, overwrite: Bool = false) async throws -> TransferExportFile {
        try Self.checkDestination(path, overwrite: overwrite)
        let jobs = try await pool.query("""
            SELECT team_id, client_id, peer_team_id FROM siwa.transfer_jobs WHERE job_id = \(jobID) AND direction = 'export'
            """)
        guard let job = jobs.first else { throw EnqueueError(message: "job \(jobID) is not a transfer export") }
        let team: String = try job.decode("team_id"), client: String = try job.decode("client_id")
        let target: String = try job.decode("peer_team_id")
        let counts = try await pool.query("""
            SELECT count(*) FILTER (WHERE s.transfer_sub IS NULL AND s.account_id IS NOT NULL)::int AS refused,
                   count(*) FILTER (WHERE s.account_id IS NULL)::int AS missing
            FROM siwa.accounts a
            LEFT JOIN siwa.transfer_subs s ON s.account_id = a.id AND s.target_team_id = \(target)
            WHERE a.team_id = \(team) AND a.client_id = \(client) AND a.deleted_at IS NULL
            """)
        let refused: Int = try counts.first?.decode("refused") ?? 0
        let missing: Int = try counts.first?.decode("missing") ?? 0
        if missing > 0 && !allowIncomplete {
            throw EnqueueError(message: "\(missing) accounts of \(team)/\(client) have no transfer outcome for \(target) yet: "
                + "let the export job finish (siwa-jobs transfer status --job \(jobID)), or pass --allow-incomplete")
        }
        // A file of this run only until it is whole (`OutputFile`): two exports to one --out never
        // publish each other's half-written file, and a failure leaves `path` as it was.
        let file: OutputFile
        do { file = try OutputFile(path: path, replacing: overwrite) } catch { throw EnqueueError(message: error.description) }
        let handle = file.handle
        var rows = 0
        do {
            try handle.write(contentsOf: Data("external_user_id,transfer_sub\n".utf8))
            var last: Int64 = 0
            while true {
                let page = try await pool.query("""
                    SELECT a.id, a.external_user_id, s.transfer_sub
                    FROM siwa.accounts a JOIN siwa.transfer_subs s ON s.account_id = a.id AND s.target_team_id = \(target)
                    WHERE a.team_id = \(team) AND a.client_id = \(client) AND a.deleted_at IS NULL
                      AND s.transfer_sub IS NOT NULL AND a.id > \(last)
                    ORDER BY a.id LIMIT \(Self.pageSize)
                    """)
                if page.isEmpty { break }
                var text = ""
                for row in page {
                    text += Self.field(try row.decode("external_user_id")) + "," + Self.field(try row.decode("transfer_sub")) + "\n"
                    last = try row.decode("id")
                }
                try handle.write(contentsOf: Data(text.utf8))
                rows += page.count
            }
        } catch {
            file.discard()
            throw error
        }
        do { try file.publish() } catch {
            throw EnqueueError(message: error.description + (error.code == EEXIST ? " (pass --force to replace a file)" : ""))
        }
        return TransferExportFile(rows: rows, refused: refused, missing: missing, target: target)
    }

    /// The hand-off file's path must not be a directory, nor an existing file unless `overwrite`.
    static func checkDestination(_ path: String, overwrite: Bool) throws {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if exists && isDirectory.boolValue {
            throw EnqueueError(message: "--out \(PrintableText.quotedPath(path)) is a directory: give a file path, e.g. \(PrintableText.quotedPath(path + "/handoff.csv"))")
        }
        if exists && !overwrite {
            throw EnqueueError(message: "--out \(PrintableText.quotedPath(path)) exists: pass --force to replace it")
        }
    }

    /// RFC 4180: quoted only when it holds a comma, quote, CR or LF.
    static func field(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
