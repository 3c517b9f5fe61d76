import Clocks
import Foundation
import Postgres
import SIWACore

/// What loading a hand-off file did.
public struct TransferImportReport: Sendable {
    /// The new `siwa.transfer_imports` id; nil when the file was refused.
    public let importID: Int64?
    public let rows: Int
    public let bytes: Int64
    /// Line-numbered errors, at most `CSVDiagnostics.maxMessages`.
    public let errors: [String]
    /// All errors, including those not listed.
    public let errorCount: Int
    /// Harmless oddities that were handled (byte-order mark, CRLF), each naming its line, and
    /// rows already migrated by an earlier import.
    public let notes: [String]
    /// Rows whose `transfer_sub` an account of the team and client already holds: loaded as
    /// `migrated`, never sent to Apple.
    public let alreadyMigrated: Int
}

/// Loads the sending team's hand-off file into `siwa.transfer_import_rows` for the recipient team.
///
/// One transaction: the file is streamed through `COPY` into a temporary table while every line is
/// validated (`TransferCSVParser`), duplicates of `transfer_sub` or `external_user_id` are found in
/// SQL with their first line numbers, and only a file with no error at all is inserted. Any error
/// rolls the transaction back, so a refused file leaves nothing behind. Loads into one team and
/// client take the advisory lock `PlanLock.transferImport` (so two concurrent loads of one file
/// run one after the other, and the second notes the rows the first holds pending).
public struct TransferCSVLoader: Sendable {
    let pool: PostgresPool
    let clock: any WallClock

    /// - Parameters:
    ///   - pool: one connection is held for the load's transaction.
    ///   - clock: the time the 60-day window and the transfer date are checked against.
    public init(pool: PostgresPool, clock: any WallClock) {
        self.pool = pool
        self.clock = clock
    }

    private struct Refused: Error { let report: TransferImportReport }

    /// - Parameters:
    ///   - path: the file, or `-` for standard input.
    ///   - teamID, clientID: the recipient team and the transferred app's client ID.
    ///   - sourceTeamID: the sending team, if known (its accounts supply emails Apple does not return).
    ///   - transferDate: `YYYY-MM-DD`.
    /// - Returns: the report; `importID` is nil when the file was refused.
    /// - Throws: `TransferRuleError` for a malformed team ID, a source team equal to the recipient,
    ///   a closed window or a transfer date in the future on the loader's clock (before reading);
    ///   `InputFileError` when the file cannot be opened (no such file, a directory, permission
    ///   denied); `DatabaseError` for database failures.
    public func load(path: String, teamID: String, clientID: String, sourceTeamID: String?, transferDate: String,
                     createdBy: String) async throws -> TransferImportReport {
        try TransferTarget.validateTeamID(teamID, field: "team-id")
        if let sourceTeamID {
            try TransferTarget.validateTeamID(sourceTeamID, field: "source-team-id")
            guard sourceTeamID != teamID else {
                throw TransferRuleError(message: "source-team-id \(sourceTeamID) is the importing team itself: a hand-off file "
                    + "comes from the team that sent the app; give that team's ID, or leave --source-team-id out")
            }
        }
        let window = try TransferWindow(day: transferDate)
        let now = clock.now
        try window.requireOpen(now: now)
        try window.requireNotAhead(maxDaysAhead: TransferWindow.maxImportDaysAhead, purpose: "an import", now: now)
        let input = try InputFile.open(path, stdin: true)
        defer { input.close() }
        let diagnostics = CSVDiagnostics()
        let stream = CSVCopyStream(input: input, diagnostics: diagnostics)
        let name = path == "-" ? "(standard input)" : URL(fileURLWithPath: path).lastPathComponent
        let day = window.day
        do {
            return try await pool.withConnection { conn in
                try await conn.transaction { tx in
                    try await PlanLock.take(PlanLock.transferImport(teamID: teamID, clientID: clientID), tx)
                    try await tx.execute("""
                        CREATE TEMP TABLE transfer_load (line_no integer, external_user_id text, transfer_sub text) ON COMMIT DROP
                        """)
                    _ = try await tx.copyFrom("COPY transfer_load (line_no, external_user_id, transfer_sub) FROM STDIN WITH (FORMAT csv)",
                                              chunks: stream)
                    var state = diagnostics.snapshot
                    if state.errorCount == 0 {
                        for message in try await Self.duplicates(tx) { diagnostics.error(message) }
                        state = diagnostics.snapshot
                    }
                    if state.errorCount == 0 && state.rows == 0 {
                        diagnostics.error("line 2: the file has a header but no rows")
                        state = diagnostics.snapshot
                    }
                    guard state.errorCount == 0 else { throw Refused(report: Self.report(nil, state)) }
                    let ids = try await tx.query("""
                        INSERT INTO siwa.transfer_imports (team_id, client_id, source_team_id, transfer_date, file_name, file_bytes,
                                                           row_count, created_by)
                        VALUES (\(teamID), \(clientID), \(sourceTeamID), \(day)::date, \(name), \(state.bytes), \(state.rows), \(createdBy))
                        RETURNING id
                        """)
                    guard let id: Int64 = try ids.first?.decode("id") else { throw EnqueueError(message: "creating the import returned no id") }
                    try await tx.execute("""
                        INSERT INTO siwa.transfer_import_rows (import_id, line_no, external_user_id, transfer_sub)
                        SELECT \(id), line_no, external_user_id, transfer_sub FROM transfer_load
                        """)
                    let done = try await tx.execute("""
                        UPDATE siwa.transfer_import_rows r
                        SET state = 'migrated', reason = 'already migrated for this team and client (account ' || m.id || '): not sent again'
                        FROM siwa.accounts m
                        WHERE r.import_id = \(id) AND m.team_id = \(teamID) AND m.client_id = \(clientID)
                          AND m.transfer_sub = r.transfer_sub
                        """)
                    try await tx.execute("""
                        INSERT INTO siwa.audit_log (actor, action, detail)
                        VALUES (\(createdBy), 'transfer.import_loaded', jsonb_build_object('import_id', \(id)::bigint,
                                'rows', \(state.rows)::int, 'already_migrated', \(done)::int, 'file', \(name)::text,
                                'team_id', \(teamID)::text))
                        """)
                    if done > 0 {
                        state.notes.append("\(done) of \(state.rows) rows are already migrated for team \(teamID) and client "
                            + "\(clientID) (an earlier import of the same users): marked migrated, Apple will not be asked again")
                    }
                    state.notes += try await Self.pendingElsewhere(tx, importID: id, teamID: teamID, clientID: clientID)
                    return Self.report(id, state, alreadyMigrated: done)
                }
            }
        } catch let refused as Refused {
            return refused.report
        }
    }

    private static func report(_ id: Int64?, _ s: CSVDiagnostics.State, alreadyMigrated: Int = 0) -> TransferImportReport {
        TransferImportReport(importID: id, rows: id == nil ? 0 : s.rows, bytes: s.bytes, errors: s.messages,
                             errorCount: s.errorCount, notes: s.notes, alreadyMigrated: alreadyMigrated)
    }

    /// One message per duplicated value (first 100 values), naming its first
    /// `CSVDiagnostics.maxLinesPerMessage` lines and how many more.
    private static func duplicates(_ tx: PostgresConnection) async throws -> [String] {
        var messages: [String] = []
        for column in ["transfer_sub", "external_user_id"] {
            let rows = try await tx.query("""
                SELECT (array_agg(line_no ORDER BY line_no))[1:\(CSVDiagnostics.maxLinesPerMessage)] AS lines, count(*)::int AS n
                FROM transfer_load GROUP BY \(unsafeSQL: column) HAVING count(*) > 1
                ORDER BY min(line_no) LIMIT 100
                """)
            for row in rows {
                let lines = try row.decode("lines", as: [Int].self), count: Int = try row.decode("n")
                let more = count > lines.count ? " and \(count - lines.count) more" : ""
                messages.append("line \(lines.first ?? 0): duplicate \(column) (appears \(count) times, on lines "
                    + lines.map(String.init).joined(separator: ", ") + more + ")")
            }
        }
        return messages
    }

    /// Notes for rows of the new import `importID` still pending in another recent import (last
    /// 61 days) of the same team and client: whichever import job is enqueued first exchanges
    /// them (`TransferImportOverlap`).
    private static func pendingElsewhere(_ tx: PostgresConnection, importID: Int64, teamID: String,
                                         clientID: String) async throws -> [String] {
        let rows = try await tx.query("""
            SELECT oi.id, (SELECT count(*) FROM siwa.transfer_import_rows r
                           JOIN siwa.transfer_import_rows o ON o.import_id = oi.id AND o.transfer_sub = r.transfer_sub
                           WHERE r.import_id = \(importID) AND r.state = 'pending' AND o.state = 'pending')::int AS n
            FROM siwa.transfer_imports oi
            WHERE oi.team_id = \(teamID) AND oi.client_id = \(clientID) AND oi.id <> \(importID)
              AND oi.created_at > now() - interval '61 days'
            ORDER BY oi.id
            """)
        return try rows.compactMap { row in
            let n: Int = try row.decode("n"), other: Int64 = try row.decode("id")
            guard n > 0 else { return nil }
            return "\(n) rows are also pending in import \(other) (the same users): the import whose job is enqueued first "
                + "exchanges them; the other does not plan them while that job is active, so Apple is asked once"
        }
    }
}
