import Foundation
import Postgres
import SIWACore

/// `siwa-jobs accounts import`: loads existing accounts of one team and client from a CSV or JSON
/// lines file (`AccountFileReader`), an upsert by (team, client, `external_user_id`).
///
/// - **Tokens never reach PostgreSQL in plaintext**: each refresh token is sealed in this process
///   (AES-256-GCM under the current key, bound to the account id as every stored token is,
///   `TokenKeyring`) before its row is sent; staging holds only ciphertext and fingerprints.
/// - **One transaction, streamed** (`AccountImporter+Stream`): rows are read in batches of
///   `batchSize`, matched to stored accounts (one round trip on a second connection, skipped when
///   the client had no account), new accounts get their ids from the table's sequence, and the
///   batch is sent with `COPY` into a temporary staging table while the next batch is prepared;
///   then duplicates and `sub`s held by other accounts are found in SQL, and the accounts are
///   inserted and updated in two statements. Imports into one team and client take the advisory
///   lock `accounts-import:TEAM:CLIENT` (one at a time).
/// - **Idempotent**: a token is compared by its fingerprint (SHA-256), not by ciphertext, so the
///   same file loaded again seals nothing and changes 0 rows. Empty optional fields keep the
///   stored value; a token revoked since (wiped, fingerprint kept) is not restored.
/// - **Bad rows**: by default any bad row refuses the whole file (nothing written), every error
///   named by line and field; with `rejects` the good rows load and the bad ones go to that file.
///   Refused against stored accounts: a different `sub` for a known `external_user_id`, a `sub`
///   held by another account of the team, a deleted account, a new token for an account whose
///   consent was revoked.
public struct AccountImporter: Sendable {
    let pool: PostgresPool
    let keyring: TokenKeyring
    var batchSize = 5_000
    /// Rows inserted or updated from which an import analyzes `siwa.accounts` afterwards.
    static let analyzeAfter = 10_000
    /// Test seam: sees the staging table inside the import's transaction, before it is applied.
    var inspectStaging: @Sendable (PostgresConnection) async throws -> Void = { _ in }

    public init(pool: PostgresPool, keyring: TokenKeyring) {
        self.pool = pool
        self.keyring = keyring
    }

    /// The team and client rows are imported into.
    struct Target: Sendable {
        let teamID: String
        let clientID: String
    }

    private struct Refused: Error { let report: AccountImportReport }

    /// - Parameters:
    ///   - path: the file, or `-` for standard input.
    ///   - rejectsPath: load good rows and write bad ones here (a new file); nil: all-or-nothing.
    ///   - createdBy: recorded in the audit row `accounts.imported`.
    /// - Returns: the report; `applied` false when the file was refused (nothing written).
    /// - Throws: `TransferRuleError` for a malformed team ID; `AccountImportError` for an empty
    ///   client ID or a rejects file that cannot be created; `InputFileError` when the file cannot
    ///   be opened; `DatabaseError`.
    public func run(path: String, teamID: String, clientID: String, rejectsPath: String?,
                    createdBy: String) async throws -> AccountImportReport {
        try TransferTarget.validateTeamID(teamID, field: "team-id")
        guard !clientID.isEmpty, !clientID.contains(where: \.isWhitespace) else {
            throw AccountImportError("--client-id must be an App ID or Services ID without spaces")
        }
        let input = try InputFile.open(path, stdin: true)
        defer { input.close() }
        let rejects = try rejectsPath.map { try RejectsFile(path: $0) }
        let target = Target(teamID: teamID, clientID: clientID)
        do {
            let report = try await pool.withConnection { conn in
                try await conn.transaction { tx in
                    try await load(input, into: target, rejects: rejects, createdBy: createdBy, tx)
                }
            }
            try rejects?.close()
            if report.applied && report.inserted + report.updated >= Self.analyzeAfter {
                // Fresh planner statistics at once rather than when autovacuum gets to it: right
                // after a large load the planner still sees the table as it was, and a re-import's
                // lookups by external_user_id ran as scans (a 1,000,000-row re-import took 58 s
                // instead of 25). A role that does not own the table gets a warning, not an error.
                _ = try? await pool.execute("ANALYZE siwa.accounts")
            }
            return report
        } catch let refused as Refused {
            try? rejects?.close()
            return refused.report
        }
    }

    private func load(_ input: InputFile, into target: Target, rejects: RejectsFile?, createdBy: String,
                      _ tx: PostgresConnection) async throws -> AccountImportReport {
        try await PlanLock.take("accounts-import:\(target.teamID):\(target.clientID)", tx)
        try await tx.execute("""
            CREATE TEMP TABLE account_import (
                line_no integer, id bigint, is_new boolean, external_user_id text, sub text, email text,
                is_private_email boolean, token_checked_at timestamptz, token_changed boolean, ciphertext bytea,
                key_id text, fingerprint text, reject_field text, reject text) ON COMMIT DROP
            """)
        var reader = AccountFileReader(input: input)
        var errors = ImportErrors(rejects: rejects)
        var report = AccountImportReport()
        try await stream(&reader, into: target, errors: &errors, report: &report, tx)
        report.bytes = reader.bytes
        report.format = (reader.format ?? .csv).rawValue
        report.notes = reader.notes
        if reader.fileError == nil {
            try await markDuplicates(tx)
            try await markSubConflicts(target, tx)
            try await collectRejected(&errors, tx)
        }
        report.rejected = errors.count
        report.errors = errors.messages
        try await inspectStaging(tx)
        if reader.fileError != nil || (errors.count > 0 && rejects == nil) {
            report.tokensSealed = 0
            throw Refused(report: report)
        }
        try await apply(target, &report, tx)
        try await tx.execute("""
            INSERT INTO siwa.audit_log (actor, action, detail)
            VALUES (\(createdBy), 'accounts.imported', jsonb_build_object(
                'team_id', \(target.teamID)::text, 'client_id', \(target.clientID)::text, 'rows', \(report.rows)::int,
                'inserted', \(report.inserted)::int, 'updated', \(report.updated)::int, 'unchanged', \(report.unchanged)::int,
                'rejected', \(report.rejected)::int, 'tokens_sealed', \(report.tokensSealed)::int))
            """)
        report.applied = true
        return report
    }

    /// Inserts the new accounts and updates the changed ones from the staging table.
    private func apply(_ target: Target, _ report: inout AccountImportReport, _ tx: PostgresConnection) async throws {
        report.inserted = try await tx.execute("""
            INSERT INTO siwa.accounts (id, external_user_id, team_id, client_id, sub, email, is_private_email,
                                       refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint,
                                       token_status, token_checked_at)
            SELECT id, external_user_id, \(target.teamID), \(target.clientID), sub, email, COALESCE(is_private_email, false),
                   ciphertext, key_id, fingerprint,
                   CASE WHEN ciphertext IS NOT NULL AND token_checked_at IS NOT NULL THEN 'valid' ELSE 'unknown' END,
                   CASE WHEN ciphertext IS NOT NULL THEN token_checked_at END
            FROM account_import WHERE is_new AND reject IS NULL
            """)
        report.updated = try await tx.execute("""
            UPDATE siwa.accounts a SET
                email = COALESCE(s.email, a.email),
                is_private_email = COALESCE(s.is_private_email, a.is_private_email),
                refresh_token_ciphertext = CASE WHEN s.token_changed THEN s.ciphertext ELSE a.refresh_token_ciphertext END,
                refresh_token_key_id = CASE WHEN s.token_changed THEN s.key_id ELSE a.refresh_token_key_id END,
                refresh_token_fingerprint = CASE WHEN s.token_changed THEN s.fingerprint ELSE a.refresh_token_fingerprint END,
                token_status = CASE WHEN NOT s.token_changed THEN a.token_status
                                    WHEN s.token_checked_at IS NOT NULL THEN 'valid' ELSE 'unknown' END,
                token_checked_at = CASE WHEN s.token_changed THEN s.token_checked_at
                                        WHEN a.refresh_token_ciphertext IS NULL THEN a.token_checked_at
                                        ELSE GREATEST(a.token_checked_at, s.token_checked_at) END,
                updated_at = now()
            FROM account_import s
            WHERE a.id = s.id AND NOT s.is_new AND s.reject IS NULL
              AND (s.token_changed
                   OR (s.email IS NOT NULL AND s.email IS DISTINCT FROM a.email)
                   OR (s.is_private_email IS NOT NULL AND s.is_private_email IS DISTINCT FROM a.is_private_email)
                   OR (s.token_checked_at IS NOT NULL AND a.refresh_token_ciphertext IS NOT NULL
                       AND s.token_checked_at > COALESCE(a.token_checked_at, '-infinity')))
            """)
        let existing = try await tx.query("SELECT count(*)::int AS n FROM account_import WHERE NOT is_new AND reject IS NULL")
        report.unchanged = (try existing.first?.decode("n", as: Int.self) ?? 0) - report.updated
    }

    /// Rows whose `external_user_id` or `sub` an earlier row of the file has are rejected (the
    /// first stays), naming that first line. A grouped check runs first; the window query only
    /// when there is a duplicate.
    private func markDuplicates(_ tx: PostgresConnection) async throws {
        for column in ["external_user_id", "sub"] {
            let any = try await tx.query("""
                SELECT EXISTS (SELECT 1 FROM account_import WHERE reject IS NULL
                               GROUP BY \(unsafeSQL: column) HAVING count(*) > 1) AS found
                """)
            guard try any.first?.decode("found", as: Bool.self) == true else { continue }
            try await tx.execute("""
                UPDATE account_import s SET reject_field = \(column), reject = 'duplicate of line ' || d.first_line
                FROM (SELECT line_no, first_value(line_no) OVER (PARTITION BY \(unsafeSQL: column) ORDER BY line_no) AS first_line
                      FROM account_import WHERE reject IS NULL) d
                WHERE s.line_no = d.line_no AND d.line_no <> d.first_line
                """)
        }
    }

    /// Rows whose `sub` another account of the team holds (`accounts_team_sub_key`), in one join.
    private func markSubConflicts(_ target: Target, _ tx: PostgresConnection) async throws {
        try await tx.execute("""
            UPDATE account_import s SET reject_field = 'sub',
                reject = 'already belongs to account ' || a.id || ' of this team (client ' || a.client_id
                         || ', external_user_id ''' || a.external_user_id || ''')'
            FROM siwa.accounts a
            WHERE a.team_id = \(target.teamID) AND a.sub = s.sub AND a.id <> s.id AND s.reject IS NULL
            """)
    }

    /// The rows the checks above rejected, in line order, as errors (and rejects-file lines).
    private func collectRejected(_ errors: inout ImportErrors, _ tx: PostgresConnection) async throws {
        var last = 0
        while true {
            let rows = try await tx.query("""
                SELECT line_no, reject_field, reject, external_user_id, sub FROM account_import
                WHERE reject IS NOT NULL AND line_no > \(last) ORDER BY line_no LIMIT 10000
                """)
            guard !rows.isEmpty else { return }
            for row in rows {
                last = try row.decode("line_no")
                try errors.add(ImportRowError(line: last, field: try row.decode("reject_field"), reason: try row.decode("reject"),
                                              externalUserID: try row.decode("external_user_id"), sub: try row.decode("sub")))
            }
        }
    }
}
