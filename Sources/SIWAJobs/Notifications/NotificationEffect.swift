import AppleID
import Queue
import Foundation

/// The outcomes of notification processing: `siwa.results.outcome` and `siwa.notifications.outcome`
/// (see `NotificationProcessingHandler`). `stale` is set by the row's trigger, never here.
enum NotificationOutcome: String, OutcomeCode, Encodable {
    case applied, stale, duplicate, ignored, unverifiable, failed, discarded
    case unknownSub = "unknown_sub", alreadyProcessed = "already_processed"
}

/// What processing decided about one notification: the columns written to its
/// `siwa.notifications` row by the processing kind's effect statement (the row's trigger then
/// applies the account changes). The item's effect payload.
struct NotificationEffect: Encodable, Sendable {
    enum Verification: String, Encodable { case verified, rejected }

    let notificationID: Int64
    var verification: Verification
    /// A reason code (`JWTVerificationError.Reason`, e.g. `badSignature`), never attacker text.
    var rejectionReason: String?
    /// The human-readable detail: header values quoted as printable ASCII of at most 40
    /// characters, the whole cut to `maxRejectionDetail` characters.
    var rejectionDetail: String?
    var eventType: String?
    var sub: String?
    /// ISO 8601 UTC with milliseconds.
    var eventTime: String?
    var email: String?
    var isPrivateEmail: Bool?
    var aud: String?
    /// `applied`, `unknown_sub`, `ignored`, `duplicate` or `unverifiable`.
    var outcome: NotificationOutcome
    var accountIDs: [Int64]?
    var error: String?
    /// Claims read with a fallback (`VerifiedClaims.warnings`); in the result's detail only.
    var warnings: [String] = []

    enum CodingKeys: String, CodingKey {
        case notificationID = "notification_id"
        case verification
        case rejectionReason = "rejection_reason"
        case rejectionDetail = "rejection_detail"
        case eventType = "event_type"
        case sub
        case eventTime = "event_time"
        case email
        case isPrivateEmail = "is_private_email"
        case aud, outcome
        case accountIDs = "account_ids"
        case error
    }

    /// Longest `rejection_detail` stored, characters.
    static let maxRejectionDetail = 300

    /// Rejected by the verifier: the reason's code, and `detail` (plus `note`) as the bounded detail.
    static func rejected(_ id: Int64, _ error: JWTVerificationError, note: String? = nil) -> NotificationEffect {
        let detail = ([error.detail] + (note.map { [$0] } ?? [])).joined(separator: "; ")
        let printable = String(detail.unicodeScalars.map { $0.value >= 0x20 && $0.value != 0x7F ? Character($0) : "?" })
        return NotificationEffect(notificationID: id, verification: .rejected, rejectionReason: error.reason.rawValue,
                                  rejectionDetail: String(printable.prefix(maxRejectionDetail)), outcome: .unverifiable)
    }

    /// From verified claims; `outcome` and `accountIDs` are filled in once accounts are looked up.
    static func verified(_ id: Int64, claims: VerifiedClaims) -> NotificationEffect {
        var effect = NotificationEffect(notificationID: id, verification: .verified, outcome: .ignored)
        effect.warnings = claims.warnings
        effect.aud = claims.aud.joined(separator: ",")
        if let event = claims.events {
            effect.eventType = event.type
            effect.sub = event.sub
            effect.email = event.email
            effect.isPrivateEmail = event.isPrivateEmail
            effect.eventTime = event.eventTimeISO8601
            if event.kind == nil { effect.error = "unknown event type" }
        } else {
            effect.error = "verified token has no events claim (not a notification)"
        }
        return effect
    }

    /// The `siwa.results` row: outcome plus safe detail (no payload, no token).
    var result: ResultRecord {
        let detail = jsonObject([
            "notification_id": String(notificationID), "event_type": eventType,
            "reason": rejectionReason ?? error, "accounts": accountIDs.map { "\($0.count)" },
            "warnings": warnings.isEmpty ? nil : warnings.joined(separator: "; "),
        ])
        return ResultRecord(outcome: outcome, detail: detail)
    }
}
