import Postgres

/// Two imports of the same users into one team and client (the same hand-off file loaded twice,
/// e.g. by two concurrent `transfer import-csv` runs) must not ask Apple twice per user. A row
/// belongs to the earliest active import job that covers it: a job never plans a row whose
/// `transfer_sub` is in the import of another running or paused import job of the same team and
/// client with a smaller job id. Import enqueues of one team and client take the advisory lock
/// `PlanLock.transferImport`, so job ids follow commit order and each planner sees the jobs
/// before it; a canary release (a completion statement) only looks at jobs before its own, which
/// were committed before it was planned.
enum TransferImportOverlap {
    /// A predicate on row `r` (`siwa.transfer_import_rows`): no earlier active import job covers it.
    /// - Parameters: SQL expressions (constant text) for the planning job's team, client, import
    ///   id and job id.
    static func notCoveredEarlier(team: String, client: String, importID: String, jobID: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM siwa.transfer_jobs ot
                    JOIN siwa.jobs oj ON oj.id = ot.job_id AND oj.state IN ('running', 'paused')
                    JOIN siwa.transfer_import_rows o ON o.import_id = ot.import_id AND o.transfer_sub = r.transfer_sub
                    WHERE ot.direction = 'import' AND ot.team_id = \(team) AND ot.client_id = \(client)
                      AND ot.import_id <> \(importID) AND ot.job_id < \(jobID))
        """
    }
}

/// Rows of an import that another active import job covers (`Enqueuer.transferImportOverlap`).
public struct TransferImportOverlapReport: Sendable, Equatable {
    /// The other job and its import.
    public let jobID: Int64
    public let importID: Int64
    /// How many of this import's unfinished rows it covers.
    public let rows: Int
}

extension Enqueuer {
    /// The active import jobs of the same team and client as import `importID` (other than
    /// `exceptJob`) whose imports hold rows of it still `pending` here: those rows are theirs.
    public func transferImportOverlap(importID: Int64, exceptJob: Int64? = nil) async throws -> [TransferImportOverlapReport] {
        let rows = try await pool.query("""
            SELECT ot.job_id, ot.import_id, count(*)::int AS n
            FROM siwa.transfer_imports i
            JOIN siwa.transfer_jobs ot ON ot.direction = 'import' AND ot.team_id = i.team_id AND ot.client_id = i.client_id
                                      AND ot.import_id <> i.id AND ot.job_id IS DISTINCT FROM \(exceptJob)
            JOIN siwa.jobs oj ON oj.id = ot.job_id AND oj.state IN ('running', 'paused')
            JOIN siwa.transfer_import_rows r ON r.import_id = i.id AND r.state = 'pending'
            JOIN siwa.transfer_import_rows o ON o.import_id = ot.import_id AND o.transfer_sub = r.transfer_sub
            WHERE i.id = \(importID)
            GROUP BY ot.job_id, ot.import_id
            ORDER BY ot.job_id
            """)
        return try rows.map { row in
            TransferImportOverlapReport(jobID: try row.decode("job_id"), importID: try row.decode("import_id"),
                                        rows: try row.decode("n"))
        }
    }
}
