import AppleID
import Clocks
import Foundation
import Postgres
import Queue

/// Receiving side of an app transfer: for each row of a loaded hand-off file
/// (`siwa.transfer_import_rows`), `POST /auth/usermigrationinfo` with `transfer_sub`, `client_id`,
/// `client_secret` and the recipient team's own Bearer token (apple-api.md §4.3), then creates or
/// updates the recipient's `siwa.accounts` row (by team, client and the app's user id) with the
/// new `sub`, email, `is_private_email` (bool or string on the wire) and the `transfer_sub` claim.
///
/// Spec: `team_id`, `client_id`, `import_id`, `transfer_date`, optional `source_team_id`.
/// Items: payload `{"line": N}` (plus `"canary": true` for the canary).
///
/// Emails (result `detail.email_change`, view `siwa.email_changes`): Apple returns an address only
/// for private-relay users. A returned relay address replaces the old one (`relay_updated`, or
/// `relay_new` when there was none); when Apple returns none the existing address — from the
/// recipient's row, else the sending team's row for the same user id — is kept (`kept_non_relay`
/// for a real address). Old and new addresses are in the result detail and the audit row.
///
/// A user whose new `sub` already belongs to another account of the team is not linked; the row is
/// marked `conflict` for ops. Per-user refusals (`invalid_request`) are `failed` with the reason.
public struct TransferImportHandler: JobHandler {
    public static let kind = "transfer-import"
    public var kind: String { Self.kind }

    let pool: PostgresPool
    let registry: AppleClientRegistry
    let tokens: MigrationTokens
    let clock: any WallClock

    /// - Parameters:
    ///   - tokens: the process's shared migration-token providers.
    ///   - clock: the time the 60-day window is checked against, before any Apple call and in a
    ///     refused grant's pause reason.
    public init(pool: PostgresPool, registry: AppleClientRegistry, tokens: MigrationTokens, clock: any WallClock) {
        self.pool = pool
        self.registry = registry
        self.tokens = tokens
        self.clock = clock
    }

    /// Another account of the team already holds the new sub.
    private static let subTaken = """
        EXISTS (SELECT 1 FROM siwa.accounts x WHERE x.team_id = t.team_id AND x.sub = d.effect->>'sub'
                AND NOT (x.client_id = t.client_id AND x.external_user_id = d.effect->>'external_user_id'))
        """

    /// Result outcomes (`siwa.results.outcome`).
    enum Outcome: String, OutcomeCode {
        case migrated, failed, discarded
    }

    /// The effect payload: the recipient's account (`sub`, email, `transfer_sub`) for a migrated
    /// user, or the refusal code (`failure`) recorded on the import row.
    struct Effect: Encodable, Sendable {
        var externalUserID: String?
        var transferSub: String?
        var sub: String?
        var email: String?
        var isPrivateEmail: Bool?
        var failure: String?
        enum CodingKeys: String, CodingKey {
            case externalUserID = "external_user_id", transferSub = "transfer_sub", sub, email
            case isPrivateEmail = "is_private_email", failure
        }
    }

    /// The effect its items' payloads feed, in the completion statement (see `CompletionEffect`).
    static let effect = CompletionEffect([
        .init("applied_effects", unsafeSQL: """
            INSERT INTO siwa.accounts AS a (external_user_id, team_id, client_id, sub, email, is_private_email, transfer_sub)
            SELECT d.effect->>'external_user_id', t.team_id, t.client_id, d.effect->>'sub', d.effect->>'email',
                   (d.effect->>'is_private_email')::boolean, d.effect->>'transfer_sub'
            FROM done d JOIN siwa.transfer_jobs t ON t.job_id = d.job_id
            WHERE d.state = 'succeeded' AND d.effect ? 'sub' AND NOT \(Self.subTaken)
            ON CONFLICT (team_id, client_id, external_user_id) DO UPDATE
            SET sub = EXCLUDED.sub, email = EXCLUDED.email, is_private_email = EXCLUDED.is_private_email,
                transfer_sub = EXCLUDED.transfer_sub, updated_at = now()
            """),
        .init("transfer_rows", unsafeSQL: """
            UPDATE siwa.transfer_import_rows r
            SET state = CASE WHEN d.state <> 'succeeded' THEN 'failed'
                             WHEN \(Self.subTaken) THEN 'conflict' ELSE 'migrated' END,
                reason = CASE WHEN d.state = 'discarded' THEN 'transient errors until attempts ran out'
                              WHEN d.state = 'failed' THEN d.effect->>'failure'
                              WHEN \(Self.subTaken) THEN 'the new sub already belongs to another account of this team'
                         END,
                job_id = d.job_id
            FROM done d
            JOIN siwa.transfer_jobs t ON t.job_id = d.job_id
            JOIN siwa.job_items i ON i.id = d.item_id AND i.job_id = d.job_id
            WHERE d.state IN ('succeeded', 'failed', 'discarded')
              AND r.import_id = t.import_id AND r.line_no = (i.payload->>'line')::int
            """),
    ] + TransferCanarySQL.gate(releaseInsert: Self.releaseInsert))

    public var writes: KindWrites { .appleCalls(effect: Self.effect) }

    /// Plans the rest of an import after its canary: pending rows past the last canary line whose
    /// `transfer_sub` no account of the team and client holds yet (not migrated by an earlier import)
    /// and no earlier active import job covers (`TransferImportOverlap`).
    static let releaseInsert = """
        INSERT INTO siwa.job_items (job_id, payload, max_attempts)
        SELECT g.job_id, jsonb_build_object('line', r.line_no), g.max_attempts
        FROM transfer_canary g
        JOIN siwa.transfer_import_rows r ON r.import_id = g.import_id
        WHERE g.canary_remaining <= 0 AND r.line_no > g.canary_last_key
          AND (r.state = 'pending' OR (g.retry_failed AND r.state = 'failed'))
          AND NOT EXISTS (SELECT 1 FROM siwa.accounts m WHERE m.team_id = g.team_id AND m.client_id = g.client_id
                          AND m.transfer_sub = r.transfer_sub)
          AND \(TransferImportOverlap.notCoveredEarlier(team: "g.team_id", client: "g.client_id", importID: "g.import_id",
                                                        jobID: "g.job_id"))
        ORDER BY r.line_no
        RETURNING job_id
        """

    struct Row: Sendable {
        let externalUserID: String
        let transferSub: String
        let oldEmail: String?
        let oldPrivate: Bool?
    }

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        let teamID: String, clientID: String, importID: Int64, window: TransferWindow, source: String?
        do {
            let spec = try TransferImportSpec.decode(job.spec)
            teamID = spec.teamID
            clientID = spec.clientID
            importID = spec.importID
            window = try TransferWindow(day: spec.transferDate)
            source = spec.sourceTeamID
            try window.requireOpen(now: clock.now)
        } catch {
            let reason = "transfer import refused before any Apple call: \(error)"
            return items.map { _ in { .pauseJob(reason: reason) } }
        }
        let client: AppleIDClient
        do { client = try registry.client(forJob: teamID, clientID: clientID) } catch { return pauseAll(items, reason: error.description) }
        let lines = items.map { Self.line(of: $0) }
        let rows = try await loadRows(importID: importID, lines: lines.compactMap { $0 }, teamID: teamID,
                                      clientID: clientID, source: source)
        let provider = tokens.provider(teamID: teamID, client: client)
        let evidence = tokens.evidence(job: job.id)
        return zip(items, lines).map { item, line in
            let row = line.flatMap { rows[$0] }
            return { [clock] in
                await Self.migrate(row: row, teamID: teamID, window: window, client: client, provider: provider,
                                   item: item, evidence: evidence, clock: clock)
            }
        }
    }

    static func line(of item: ClaimedItem) -> Int? {
        guard let text = item.payload, let data = text.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let number = object["line"] as? NSNumber else { return nil }
        return number.intValue
    }

    private func loadRows(importID: Int64, lines: [Int], teamID: String, clientID: String,
                          source: String?) async throws -> [Int: Row] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT r.line_no, r.external_user_id, r.transfer_sub,
                       CASE WHEN b.id IS NOT NULL THEN b.email ELSE s.email END AS old_email,
                       CASE WHEN b.id IS NOT NULL THEN b.is_private_email ELSE s.is_private_email END AS old_private
                FROM siwa.transfer_import_rows r
                LEFT JOIN siwa.accounts b ON b.team_id = \(teamID) AND b.client_id = \(clientID)
                                         AND b.external_user_id = r.external_user_id
                LEFT JOIN siwa.accounts s ON s.team_id = \(source) AND s.client_id = \(clientID)
                                         AND s.external_user_id = r.external_user_id
                WHERE r.import_id = \(importID) AND r.line_no = ANY(\(lines))
                """)
        }
        var map: [Int: Row] = [:]
        for row in rows {
            map[try row.decode("line_no")] = Row(
                externalUserID: try row.decode("external_user_id"), transferSub: try row.decode("transfer_sub"),
                oldEmail: try row.decode("old_email", as: String?.self), oldPrivate: try row.decode("old_private", as: Bool?.self))
        }
        return map
    }

    static func migrate(row: Row?, teamID: String, window: TransferWindow, client: AppleIDClient,
                        provider: MigrationTokenProvider, item: ClaimedItem, evidence: GrantEvidence,
                        clock: any WallClock) async -> ItemOutcome {
        guard let row else {
            return .failed(ResultRecord(Outcome.failed, detail: jsonObject(["reason": "import row not found"])),
                           audit: nil, effect: EffectPayload(Effect(failure: "import row not found")))
        }
        let transferSub = row.transferSub
        do {
            let user = try await MigrationCall.run(provider, evidence: evidence) { token throws(AppleIDError) in
                try await client.exchangeTransferSub(transferSub, accessToken: token)
            }
            return migrated(row: row, user: user)
        } catch {
            let failure = await MigrationCall.settle(error, item: item.id, attempt: item.attempt, evidence: evidence)
            let discarded = ResultRecord(Outcome.discarded, detail: jsonObject(["external_user_id": row.externalUserID]))
            if let outcome = MigrationCall.jobLevelOutcome(failure, clientID: client.clientID, teamID: teamID,
                                                           window: window, now: clock.now, discarded: discarded) {
                return outcome
            }
            guard let (error, note) = failure.perUser else { return .released }
            let code = error.appleError ?? "http_\(error.httpStatus.map(String.init) ?? "error")"
            let reason = note ?? (error.appleError == "invalid_request"
                ? "Apple refused this transfer_sub (invalid_request): the user revoked Sign in with Apple for this app, or the "
                    + "transfer_sub was generated for another team or is unknown"
                : "Apple refused this transfer_sub: \(error.detail)")
            return .failed(
                ResultRecord(Outcome.failed, httpStatus: error.httpStatus, appleError: error.appleError,
                             detail: jsonObject(["reason": reason, "external_user_id": row.externalUserID])),
                audit: AuditRecord(action: "transfer.import_failed",
                                   detail: jsonObject(["external_user_id": row.externalUserID, "apple_error": code])),
                effect: EffectPayload(Effect(failure: code)))
        }
    }

    /// The new email and how it changed (see the type's documentation).
    static func emailChange(old: String?, oldPrivate: Bool?, user: MigratedUser) -> (email: String?, isPrivate: Bool, change: String) {
        if let new = user.email {
            let change = old == nil ? "relay_new" : (old == new ? "unchanged" : "relay_updated")
            return (new, user.isPrivateEmail ?? true, change)
        }
        guard let old else { return (nil, false, "none") }
        if oldPrivate == true { return (old, true, "kept_no_email") }
        return (old, false, "kept_non_relay")
    }

    static func migrated(row: Row, user: MigratedUser) -> ItemOutcome {
        let email = emailChange(old: row.oldEmail, oldPrivate: row.oldPrivate, user: user)
        let detail = jsonObject([
            "external_user_id": row.externalUserID, "email_change": email.change,
            "old_email": row.oldEmail, "new_email": email.email,
            "note": email.change == "kept_non_relay" ? "Apple returns no email for users on a real address; the existing address is kept" : nil,
        ])
        return .succeeded(
            ResultRecord(Outcome.migrated, httpStatus: 200, detail: detail),
            audit: AuditRecord(action: "transfer.imported", detail: detail),
            effect: EffectPayload(Effect(externalUserID: row.externalUserID, transferSub: row.transferSub, sub: user.sub,
                                         email: email.email, isPrivateEmail: email.isPrivate)))
    }
}
