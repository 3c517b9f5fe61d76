import Foundation
import Postgres

extension Enqueuer {
    /// Default number of canary items: run alone before the rest of a transfer job is planned.
    public static let defaultCanary = 20

    /// Plans a transfer export for the accounts of `teamID`/`clientID` (sending team) that have no
    /// `transfer_sub` for `target` yet (nor a recorded refusal, unless `retryFailed`).
    ///
    /// Only the first `canary` accounts (by id) are planned now; the rest is planned when they
    /// finish (`TransferCanarySQL`). `canary: 0` plans everything at once. `canary_size` records
    /// the canary items actually planned; a job with no item is created already released. The job
    /// runs at `priority` (nil: `JobPriority.operations`).
    /// - Parameters:
    ///   - target: the recipient's 10-character Team ID.
    ///   - transferDate: `YYYY-MM-DD`, the day the transfer is (or was) accepted; at most
    ///     `TransferWindow.maxExportDaysAhead` days ahead of today (UTC) on the enqueuer's clock.
    /// - Throws: `TransferRuleError` (bad team ID or target, own team, closed window, date too far
    ///   ahead) before anything is written; `EnqueueError` when an export for this client and
    ///   target is already active, for a priority outside `JobPriority.range`, or `.likelyTypo`
    ///   when the team or client has no account at all.
    public func enqueueTransferExport(teamID: String, clientID: String, target: String, transferDate: String,
                                      canary: Int = defaultCanary, retryFailed: Bool = false, maxAttempts: Int = 5,
                                      priority: Int? = nil, createdBy: String) async throws -> EnqueuedJob {
        let priority = try Self.priority(priority, kind: TransferExportHandler.kind)
        try TransferTarget.validateTeamID(teamID, field: "team-id")
        try TransferTarget.validate(target, sender: teamID)
        let window = try TransferWindow(day: transferDate)
        let now = clock.now
        try window.requireOpen(now: now)
        try window.requireNotAhead(maxDaysAhead: TransferWindow.maxExportDaysAhead, purpose: "an export", now: now)
        let canarySize = max(0, canary)
        let spec = TransferExportSpec(teamID: teamID, clientID: clientID, target: target, transferDate: window.day)
        let uniqueKey = "transfer-export:\(teamID):\(clientID):\(target)"
        let day = window.day
        try await requireKnownTarget(teamID: teamID, clientID: clientID)
        return try await plan(kind: TransferExportHandler.kind, spec: spec, priority: priority, uniqueKey: uniqueKey,
                              createdBy: createdBy) { jobID in
            """
            WITH picked AS (
                SELECT a.id FROM siwa.accounts a
                WHERE a.team_id = \(teamID) AND a.client_id = \(clientID) AND a.deleted_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM siwa.transfer_subs s
                                  WHERE s.account_id = a.id AND s.target_team_id = \(target)
                                    AND (s.transfer_sub IS NOT NULL OR NOT \(retryFailed)::boolean))
                ORDER BY a.id
                LIMIT \(canarySize > 0 ? canarySize : nil)::bigint
            ), items AS (
                INSERT INTO siwa.job_items (job_id, account_id, payload, max_attempts)
                SELECT \(jobID), id, CASE WHEN \(canarySize)::int > 0 THEN '{"canary":true}'::jsonb END, \(maxAttempts)
                FROM picked ORDER BY id
                RETURNING account_id
            ), gate AS (
                INSERT INTO siwa.transfer_jobs (job_id, direction, team_id, client_id, peer_team_id, transfer_date, retry_failed,
                                                max_attempts, canary_size, canary_remaining, canary_last_key, released_at)
                SELECT \(jobID), 'export', \(teamID), \(clientID), \(target), \(day)::date, \(retryFailed)::boolean, \(maxAttempts),
                       c.n, c.n, COALESCE((SELECT max(account_id) FROM items), 0),
                       CASE WHEN c.n > 0 THEN NULL ELSE now() END
                FROM (SELECT CASE WHEN \(canarySize)::int > 0 THEN (SELECT count(*) FROM items) ELSE 0 END AS n) c
            )
            SELECT 1 FROM items
            """
        }
    }

    /// Plans a transfer import of a loaded hand-off file (`siwa-jobs transfer import-csv`): one item
    /// per row still `pending` (and `failed` ones when `retryFailed`), canary first as for exports.
    /// Rows whose `transfer_sub` an account of the team and client already holds (the same file
    /// loaded twice) get no item: Apple is never asked again for done work; nor do rows an earlier
    /// active import job of the team and client covers (`TransferImportOverlap`). The job runs at
    /// `priority` (nil: `JobPriority.operations`).
    /// - Throws: `EnqueueError` for an unknown import, an active import of it, or a priority outside
    ///   `JobPriority.range`; `TransferRuleError` when the window has closed (or the date is ahead)
    ///   on the enqueuer's clock.
    public func enqueueTransferImport(importID: Int64, canary: Int = defaultCanary, retryFailed: Bool = false,
                                      maxAttempts: Int = 5, priority: Int? = nil, createdBy: String) async throws -> EnqueuedJob {
        let priority = try Self.priority(priority, kind: TransferImportHandler.kind)
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT team_id, client_id, source_team_id, transfer_date::text AS transfer_date
                FROM siwa.transfer_imports WHERE id = \(importID)
                """)
        }
        guard let row = rows.first else {
            throw EnqueueError(message: "import \(importID) not found: load the file with 'siwa-jobs transfer import-csv' first")
        }
        let teamID: String = try row.decode("team_id"), clientID: String = try row.decode("client_id")
        let source = try row.decode("source_team_id", as: String?.self)
        let window = try TransferWindow(day: try row.decode("transfer_date"))
        let now = clock.now
        try window.requireOpen(now: now)
        try window.requireNotAhead(maxDaysAhead: TransferWindow.maxImportDaysAhead, purpose: "an import", now: now)
        let canarySize = max(0, canary)
        let spec = TransferImportSpec(teamID: teamID, clientID: clientID, importID: importID, transferDate: window.day,
                                      sourceTeamID: source)
        let day = window.day
        let covered = TransferImportOverlap.notCoveredEarlier(team: "ti.team_id", client: "ti.client_id", importID: "ti.id",
                                                              jobID: "ti.job_id")
        return try await plan(kind: TransferImportHandler.kind, spec: spec, priority: priority, uniqueKey: "transfer-import:\(importID)",
                              lock: PlanLock.transferImport(teamID: teamID, clientID: clientID), createdBy: createdBy) { jobID in
            """
            WITH picked AS (
                SELECT r.line_no
                FROM siwa.transfer_import_rows r
                CROSS JOIN (SELECT id, team_id, client_id, \(jobID)::bigint AS job_id FROM siwa.transfer_imports
                            WHERE id = \(importID)) ti
                WHERE r.import_id = \(importID) AND (r.state = 'pending' OR (\(retryFailed)::boolean AND r.state = 'failed'))
                  AND NOT EXISTS (SELECT 1 FROM siwa.accounts m WHERE m.team_id = \(teamID) AND m.client_id = \(clientID)
                                  AND m.transfer_sub = r.transfer_sub)
                  AND \(unsafeSQL: covered)
                ORDER BY r.line_no
                LIMIT \(canarySize > 0 ? canarySize : nil)::bigint
            ), items AS (
                INSERT INTO siwa.job_items (job_id, payload, max_attempts)
                SELECT \(jobID), CASE WHEN \(canarySize)::int > 0 THEN jsonb_build_object('line', line_no, 'canary', true)
                                      ELSE jsonb_build_object('line', line_no) END, \(maxAttempts)
                FROM picked ORDER BY line_no
                RETURNING (payload->>'line')::int AS line_no
            ), gate AS (
                INSERT INTO siwa.transfer_jobs (job_id, direction, team_id, client_id, peer_team_id, transfer_date, import_id,
                                                retry_failed, max_attempts, canary_size, canary_remaining, canary_last_key,
                                                released_at)
                SELECT \(jobID), 'import', \(teamID), \(clientID), \(source), \(day)::date, \(importID), \(retryFailed)::boolean,
                       \(maxAttempts), c.n, c.n, COALESCE((SELECT max(line_no) FROM items), 0),
                       CASE WHEN c.n > 0 THEN NULL ELSE now() END
                FROM (SELECT CASE WHEN \(canarySize)::int > 0 THEN (SELECT count(*) FROM items) ELSE 0 END AS n) c
            )
            SELECT 1 FROM items
            """
        }
    }
}

extension Enqueuer {
    /// Opens a transfer job's canary gate by hand (ops escape hatch, e.g. when a canary item was
    /// lost to repeated worker crashes): plans the rest of the job now, as the last canary
    /// completion would have. Returns how many items were planned (0 if already released).
    public func releaseTransferCanary(jobID: Int64) async throws -> Int {
        let rows = try await pool.query("SELECT direction FROM siwa.transfer_jobs WHERE job_id = \(jobID)")
        guard let direction: String = try rows.first?.decode("direction") else {
            throw EnqueueError(message: "job \(jobID) is not a transfer job")
        }
        let insert = direction == "export" ? TransferExportHandler.releaseInsert : TransferImportHandler.releaseInsert
        let result = try await pool.query("""
            WITH transfer_canary AS (
                UPDATE siwa.transfer_jobs t SET canary_remaining = 0, released_at = now()
                WHERE t.job_id = \(jobID) AND t.released_at IS NULL
                RETURNING t.job_id, t.team_id, t.client_id, t.peer_team_id, t.import_id, t.retry_failed, t.max_attempts,
                          t.canary_size, t.canary_remaining, t.canary_succeeded, t.canary_last_key
            ), transfer_release AS (
            \(unsafeSQL: insert)
            ), bumped AS (
                UPDATE siwa.jobs j SET item_count = j.item_count + (SELECT count(*) FROM transfer_release)
                WHERE j.id = \(jobID) AND EXISTS (SELECT 1 FROM transfer_canary)
                RETURNING pg_notify(\(Self.channel), j.kind)
            )
            SELECT count(*)::int AS n FROM transfer_release
            """)
        return try result.first?.decode("n") ?? 0
    }
}
