import Foundation

/// The `events` claim of a server-to-server notification (apple-api.md §8.3), normalised:
/// - `events` may be a JSON object or a JSON-encoded string holding that object (real traffic);
/// - `type` is trimmed and lower-cased; `account-deleted` (Apple's doc) becomes `account-delete`
///   (real traffic); other values are kept so the caller can record them;
/// - `is_private_email` is read leniently (bool, `"true"`/`"false"`, `1`/`0`, `"1"`/`"0"`);
///   another shape reads as `false` with a warning (`VerifiedClaims.warnings`), never a rejection;
/// - `sub` is required and non-empty;
/// - `event_time` is seconds or milliseconds since 1970, told apart by magnitude: values above
///   10^11 are milliseconds (10^11 s is the year 5138). It is kept as integer milliseconds, so
///   no value loses a millisecond to floating point on its way to the database.
public struct NotificationEvent: Sendable, Equatable, Encodable {
    /// The four event types Apple sends.
    public enum Kind: String, Sendable, CaseIterable {
        case emailDisabled = "email-disabled"
        case emailEnabled = "email-enabled"
        case consentRevoked = "consent-revoked"
        case accountDelete = "account-delete"
    }

    /// Normalised type, e.g. `account-delete`.
    public let type: String
    /// Team-scoped user id the event is about.
    public let sub: String
    /// Relay or real address (email-enabled/-disabled only).
    public let email: String?
    public let isPrivateEmail: Bool?
    /// When the event happened, milliseconds since 1970 (exact); nil if `event_time` is absent.
    public let eventTimeMilliseconds: Int64?

    /// When the event happened; nil if `event_time` is absent. For display and comparisons: the
    /// exact value is `eventTimeMilliseconds` (a `Date` is a `Double` of seconds since 2001).
    public var eventTime: Date? {
        eventTimeMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// `event_time` as ISO 8601 UTC with milliseconds (`2022-07-12T09:11:03.012Z`), formatted from
    /// the integer milliseconds.
    public var eventTimeISO8601: String? { eventTimeMilliseconds.map { Self.iso8601(milliseconds: $0) } }

    /// `type` as a known kind, or nil for a type this code does not know.
    public var kind: Kind? { Kind(rawValue: type) }

    /// - Parameter eventTimeMilliseconds: milliseconds since 1970.
    public init(type: String, sub: String, email: String?, isPrivateEmail: Bool?, eventTimeMilliseconds: Int64?) {
        self.type = type
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
        self.eventTimeMilliseconds = eventTimeMilliseconds
    }

    /// - Parameter eventTime: rounded to the nearest millisecond.
    public init(type: String, sub: String, email: String?, isPrivateEmail: Bool?, eventTime: Date?) {
        self.init(type: type, sub: sub, email: email, isPrivateEmail: isPrivateEmail,
                  eventTimeMilliseconds: eventTime.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) })
    }

    /// Values above this are milliseconds since 1970; at or below, seconds.
    public static let millisecondsThreshold = 100_000_000_000

    /// Decodes the `events` claim value; fallbacks (an odd `is_private_email`) are appended to
    /// `warnings`.
    /// - Throws: `JWTVerificationError` `.malformed` naming the field (`claim events`,
    ///   `claim events type`, `claim events sub`, ...) when the shape is not one of those above.
    static func decode(_ value: JSONValue, warnings: inout [String]) throws(JWTVerificationError) -> NotificationEvent {
        let members: [String: JSONValue]
        switch value {
        case .object(let object):
            members = object
        case .string(let text):
            guard let object = JSONValue.object(from: Array(text.utf8)) else {
                throw JWTVerificationError(.malformed, "claim events: string does not hold a JSON object")
            }
            members = object
        default:
            throw JWTVerificationError(.malformed, "claim events: expected an object or a JSON-encoded object string, got \(value.kind)")
        }
        let reader = ClaimReader(members: members, context: "claim events")
        guard let rawType = try reader.string("type") else {
            throw JWTVerificationError(.malformed, "claim events type: missing")
        }
        guard let sub = try reader.string("sub") else {
            throw JWTVerificationError(.malformed, "claim events sub: missing")
        }
        guard !sub.isEmpty else { throw JWTVerificationError(.malformed, "claim events sub: empty") }
        var type = rawType.trimmingCharacters(in: .whitespaces).lowercased()
        if type == "account-deleted" { type = Kind.accountDelete.rawValue }
        var milliseconds: Int64?
        if let raw = try reader.integer("event_time", allowString: true) {
            guard raw >= 0 else { throw JWTVerificationError(.malformed, "claim events event_time: negative") }
            milliseconds = raw > millisecondsThreshold ? Int64(raw) : Int64(raw) * 1000
        }
        return NotificationEvent(
            type: type,
            sub: sub,
            email: try reader.string("email"),
            isPrivateEmail: reader.lenientBool("is_private_email", warnings: &warnings),
            eventTimeMilliseconds: milliseconds
        )
    }

    private enum CodingKeys: String, CodingKey {
        case type, sub, email
        case isPrivateEmail = "is_private_email"
        case eventTime = "event_time"
    }

    /// Encodes Apple's field names; `event_time` as ISO 8601 UTC with milliseconds
    /// (`2022-07-12T09:11:03.012Z`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(sub, forKey: .sub)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encodeIfPresent(isPrivateEmail, forKey: .isPrivateEmail)
        try container.encodeIfPresent(eventTimeISO8601, forKey: .eventTime)
    }

    /// ISO 8601 UTC with exactly three fraction digits, from integer milliseconds since 1970
    /// (whole seconds format exactly; the milliseconds are appended as digits).
    static func iso8601(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = Int(milliseconds - seconds * 1000)
        let whole = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
        let digits = String(fraction)
        return String(whole.dropLast()) + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
