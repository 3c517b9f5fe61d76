import AppleID
import Clocks
import Foundation
import Postgres
import Queue

/// Sending side of an app transfer: for each account of one team and client, `POST
/// /auth/usermigrationinfo` with `sub`, `target` (the recipient Team ID), `client_id`,
/// `client_secret` and `Authorization: Bearer` (apple-api.md §4.2; TN3159), storing the returned
/// `transfer_sub` in `siwa.transfer_subs`.
///
/// Spec: `team_id`, `client_id`, `target`, `transfer_date` (`YYYY-MM-DD`). Before any Apple call
/// the worker re-checks `target` (10 characters `[A-Z0-9]`, not the sender) and the 60-day window;
/// either failure pauses the job with the reason.
///
/// Outcomes: `exported` (a transfer_sub stored); `failed` for a per-user refusal, recorded with
/// Apple's error and never aborting the batch (`invalid_request`: the user revoked access or the sub
/// is unknown); `discarded` after transient errors ran out of attempts. Configuration errors and
/// `invalid_grant` with a fresh token pause the job (`MigrationCall.jobLevelOutcome`).
public struct TransferExportHandler: JobHandler {
    public static let kind = "transfer-export"
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

    /// Result outcomes (`siwa.results.outcome`).
    enum Outcome: String, OutcomeCode {
        case exported, failed, discarded
    }

    /// The effect payload: the `siwa.transfer_subs` row for `target`, with the transfer_sub or the
    /// refusal code.
    struct Effect: Encodable, Sendable {
        let target: String
        var transferSub: String?
        var failure: String?
        enum CodingKeys: String, CodingKey { case target, transferSub = "transfer_sub", failure }
    }

    /// The effect its items' payloads feed, in the completion statement (see `CompletionEffect`).
    static let effect = CompletionEffect([.init("applied_effects", unsafeSQL: """
        INSERT INTO siwa.transfer_subs AS s (account_id, target_team_id, transfer_sub, failure, job_id)
        SELECT d.account_id, d.effect->>'target', d.effect->>'transfer_sub', d.effect->>'failure', d.job_id
        FROM done d
        WHERE d.account_id IS NOT NULL AND d.effect ? 'target' AND d.state IN ('succeeded', 'failed')
        ON CONFLICT (account_id, target_team_id) DO UPDATE
        SET transfer_sub = EXCLUDED.transfer_sub, failure = EXCLUDED.failure, job_id = EXCLUDED.job_id, updated_at = now()
        WHERE s.transfer_sub IS NULL
        """)] + TransferCanarySQL.gate(releaseInsert: Self.releaseInsert))

    public var writes: KindWrites { .appleCalls(effect: Self.effect) }

    /// Plans the rest of an export after its canary: the same selection as `enqueueTransferExport`,
    /// past the last canary account.
    static let releaseInsert = """
        INSERT INTO siwa.job_items (job_id, account_id, max_attempts)
        SELECT g.job_id, a.id, g.max_attempts
        FROM transfer_canary g
        JOIN siwa.accounts a ON a.team_id = g.team_id AND a.client_id = g.client_id
        WHERE g.canary_remaining <= 0 AND a.id > g.canary_last_key AND a.deleted_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM siwa.transfer_subs s
                          WHERE s.account_id = a.id AND s.target_team_id = g.peer_team_id
                            AND (s.transfer_sub IS NOT NULL OR NOT g.retry_failed))
        ORDER BY a.id
        RETURNING job_id
        """

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        let teamID: String, clientID: String, target: String, window: TransferWindow
        do {
            let spec = try TransferExportSpec.decode(job.spec)
            teamID = spec.teamID
            clientID = spec.clientID
            target = spec.target
            window = try TransferWindow(day: spec.transferDate)
            try TransferTarget.validate(target, sender: teamID)
            try window.requireOpen(now: clock.now)
        } catch {
            let reason = "transfer export refused before any Apple call: \(error)"
            return items.map { _ in { .pauseJob(reason: reason) } }
        }
        let client: AppleIDClient
        do { client = try registry.client(forJob: teamID, clientID: clientID) } catch { return pauseAll(items, reason: error.description) }
        let subs = try await loadSubs(items.compactMap(\.accountID))
        let provider = tokens.provider(teamID: teamID, client: client)
        let evidence = tokens.evidence(job: job.id)
        return items.map { item in
            let sub = item.accountID.flatMap { subs[$0] }
            return { [clock] in
                await Self.export(sub: sub, target: target, teamID: teamID, window: window, client: client, provider: provider,
                                  item: item, evidence: evidence, clock: clock)
            }
        }
    }

    private func loadSubs(_ accountIDs: [Int64]) async throws -> [Int64: String] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("SELECT id, sub FROM siwa.accounts WHERE id = ANY(\(accountIDs))")
        }
        var map: [Int64: String] = [:]
        for row in rows { map[try row.decode("id")] = try row.decode("sub") }
        return map
    }

    static func export(sub: String?, target: String, teamID: String, window: TransferWindow, client: AppleIDClient,
                       provider: MigrationTokenProvider, item: ClaimedItem, evidence: GrantEvidence,
                       clock: any WallClock) async -> ItemOutcome {
        guard let sub else {
            return .failed(ResultRecord(Outcome.failed, detail: jsonObject(["reason": "account not found"])), audit: nil, effect: nil)
        }
        do {
            let transferSub = try await MigrationCall.run(provider, evidence: evidence) { token throws(AppleIDError) in
                try await client.exchangeSub(sub, target: target, accessToken: token)
            }
            return .succeeded(
                ResultRecord(Outcome.exported, httpStatus: 200, detail: jsonObject(["target": target])),
                audit: AuditRecord(action: "transfer.exported", detail: jsonObject(["target": target])),
                effect: EffectPayload(Effect(target: target, transferSub: transferSub)))
        } catch {
            let failure = await MigrationCall.settle(error, item: item.id, attempt: item.attempt, evidence: evidence)
            let discarded = ResultRecord(Outcome.discarded, detail: "{}")
            if let outcome = MigrationCall.jobLevelOutcome(failure, clientID: client.clientID, teamID: teamID,
                                                           window: window, now: clock.now, discarded: discarded) {
                return outcome
            }
            guard let (error, note) = failure.perUser else { return .released }
            let code = error.appleError ?? "http_\(error.httpStatus.map(String.init) ?? "error")"
            let reason = note ?? (error.appleError == "invalid_request"
                ? "Apple refused this user (invalid_request): usually the user revoked Sign in with Apple for this app, "
                    + "or the sub is not a user of this app"
                : "Apple refused this user: \(error.detail)")
            return .failed(
                ResultRecord(Outcome.failed, httpStatus: error.httpStatus, appleError: error.appleError,
                             detail: jsonObject(["reason": reason, "target": target])),
                audit: AuditRecord(action: "transfer.export_failed", detail: jsonObject(["target": target, "apple_error": code])),
                effect: EffectPayload(Effect(target: target, failure: code)))
        }
    }
}
