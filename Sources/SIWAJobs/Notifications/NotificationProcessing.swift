import AppleID
import Clocks
import Foundation
import Postgres
import Queue

/// Applies stored server-to-server notifications (apple-api.md §8) to accounts. Items carry
/// `{"notification_id": N}`.
///
/// Each notification is verified with `JWTVerifier` as of its `received_at` (so a processing
/// backlog never expires a genuine notification), then matched to accounts of this team whose
/// `sub` is the event's and whose client id is configured. The item's effect sets the row's
/// columns and `processed_at` in the completion statement (lease-guarded, so at most one
/// attempt's completion lands); the row's trigger (`siwa.apply_notification`) makes the account
/// changes and writes their audit rows in that same statement, only when `processed_at` goes
/// from NULL to set: each notification takes effect exactly once.
///
/// Outcomes: `applied`, `stale` (an email event older than the one applied; set by the trigger),
/// `duplicate` (verified, but another payload with its `jti` was processed as verified: nothing
/// changes; checked again by the row's BEFORE trigger under a per-`jti` lock, so concurrent
/// workers never apply one `jti` twice), `unknown_sub` (verified, no account), `ignored`
/// (verified, not one of the four event types, or no `events`), `unverifiable` (rejected; the
/// reason is kept; the item fails so `work --drain` exits 1), `already_processed`. A JWKS that cannot be fetched is
/// transient: the item is retried. An unknown `kid` is retried for `unknownKIDPatience` (see
/// `NotificationProcessing+UnknownKID.swift`) before it is final.
public struct NotificationProcessingHandler: JobHandler {
    public static let kind = "notification-processing"
    public var kind: String { Self.kind }

    let pool: PostgresPool
    let verifier: JWTVerifier
    let teamID: String
    let unknownKIDPatience: Duration

    /// - Parameters:
    ///   - verifier: checks signature (RS256, key by `kid`), `iss`, `aud` against its client ids,
    ///     times; its clock also judges `unknownKIDPatience`.
    ///   - teamID: the team whose accounts notifications apply to.
    ///   - unknownKIDPatience: how long after its receipt a notification whose `kid` is not in the
    ///     JWKS keeps being retried (default 10 minutes; negative means zero).
    public init(pool: PostgresPool, verifier: JWTVerifier, teamID: String, unknownKIDPatience: Duration = .seconds(600)) {
        self.pool = pool
        self.verifier = verifier
        self.teamID = teamID
        self.unknownKIDPatience = max(.zero, unknownKIDPatience)
    }

    /// The effect its items' payloads feed, in the completion statement (see `CompletionEffect`).
    static let effect = CompletionEffect([.init("applied_effects", unsafeSQL: """
        UPDATE siwa.notifications n
        SET verification = d.effect->>'verification',
            rejection_reason = d.effect->>'rejection_reason',
            rejection_detail = d.effect->>'rejection_detail',
            event_type = d.effect->>'event_type',
            sub = d.effect->>'sub',
            event_time = (d.effect->>'event_time')::timestamptz,
            email = d.effect->>'email',
            is_private_email = (d.effect->>'is_private_email')::boolean,
            aud = d.effect->>'aud',
            outcome = d.effect->>'outcome',
            account_ids = CASE WHEN d.effect ? 'account_ids'
                               THEN ARRAY(SELECT jsonb_array_elements_text(d.effect->'account_ids')::bigint) END,
            error = d.effect->>'error',
            processed_at = now()
        FROM done d
        WHERE d.effect ? 'notification_id' AND n.id = (d.effect->>'notification_id')::bigint
          AND n.processed_at IS NULL
        """)])

    public var writes: KindWrites { KindWrites(effect: Self.effect) }

    struct StoredNotification: Sendable {
        let id: Int64
        let payload: String
        let receivedAt: Date
        let processed: Bool
        /// Another row with this `jti` was processed as verified.
        let jtiProcessed: Bool
    }

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        let ids = items.map { Self.notificationID($0.payload) ?? -1 }
        var itemFor: [Int64: ClaimedItem] = [:]
        for (id, item) in zip(ids, items) where itemFor[id] == nil { itemFor[id] = item }
        let stored = try await load(ids.filter { $0 > 0 })
        var decided: [Int64: ItemOutcome] = [:]
        var pending: [NotificationEffect] = []
        for id in Set(ids).sorted() where id > 0 {
            guard let row = stored[id], let item = itemFor[id] else { continue }
            if row.processed {
                decided[id] = .succeeded(ResultRecord(outcome: NotificationOutcome.alreadyProcessed, detail: jsonObject(["notification_id": "\(id)"])),
                                         audit: nil, effect: nil)
                continue
            }
            do {
                let claims = try await verifier.verify(row.payload, at: row.receivedAt)
                var effect = NotificationEffect.verified(id, claims: claims)
                if row.jtiProcessed {
                    effect.outcome = .duplicate
                    effect.error = "jti already processed as another notification"
                }
                pending.append(effect)
            } catch {
                decided[id] = await rejection(row, error, item: item)
            }
        }
        let accounts = try await accountIDs(subs: pending.filter { $0.error == nil }.compactMap(\.sub))
        for var effect in pending {
            if effect.error == nil, let sub = effect.sub {
                if let found = accounts[sub], !found.isEmpty {
                    effect.outcome = .applied
                    effect.accountIDs = found
                } else {
                    effect.outcome = .unknownSub
                    effect.error = "no account of team \(teamID) for this sub with a configured client id"
                }
            }
            decided[effect.notificationID] = .succeeded(effect.result, audit: nil, effect: EffectPayload(effect))
        }
        return ids.map { id in
            let outcome = decided[id] ?? .failed(
                ResultRecord(outcome: NotificationOutcome.failed, detail: jsonObject(["reason": "item payload names no stored notification"])),
                audit: nil, effect: nil)
            return { outcome }
        }
    }

    static func notificationID(_ payload: String?) -> Int64? {
        guard let payload, let data = payload.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let number = object["notification_id"] as? NSNumber else { return nil }
        return number.int64Value
    }

    private func load(_ ids: [Int64]) async throws -> [Int64: StoredNotification] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT n.id, COALESCE(n.payload, '') AS payload, n.received_at, n.processed_at IS NOT NULL AS processed,
                       EXISTS (SELECT 1 FROM siwa.notifications o
                               WHERE o.jti = n.jti AND o.id <> n.id AND o.verification = 'verified'
                                 AND o.processed_at IS NOT NULL) AS jti_processed
                FROM siwa.notifications n WHERE n.id = ANY(\(ids))
                """)
        }
        var map: [Int64: StoredNotification] = [:]
        for row in rows {
            let id: Int64 = try row.decode("id")
            map[id] = StoredNotification(id: id, payload: try row.decode("payload"),
                                         receivedAt: try row.decode("received_at"), processed: try row.decode("processed"),
                                         jtiProcessed: try row.decode("jti_processed"))
        }
        return map
    }

    private func accountIDs(subs: [String]) async throws -> [String: [Int64]] {
        guard !subs.isEmpty else { return [:] }
        let clients = verifier.clientIDs
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT sub, array_agg(id ORDER BY id) AS ids FROM siwa.accounts
                WHERE team_id = \(teamID) AND sub = ANY(\(subs)) AND client_id = ANY(\(clients))
                GROUP BY sub
                """)
        }
        var map: [String: [Int64]] = [:]
        for row in rows { map[try row.decode("sub")] = try row.decode("ids", as: [Int64].self) }
        return map
    }
}
