import Foundation

/// The `events` claim of a server-to-server notification (apple-api.md §8.3), normalised:
/// - `events` may be a JSON object or a JSON-encoded string holding that object (real traffic);
/// - `type` is trimmed and lower-cased; `account-deleted` (Apple's doc) becomes `account-delete`
///   (real traffic); other values are kept so the caller can record them;
/// - `is_private_email` may be a bool or `"true"`/`"false"`;
/// - `event_time` is seconds or milliseconds since 1970, told apart by magnitude: values above
///   10^11 are milliseconds (10^11 s is the year 5138).
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
    /// When the event happened; nil if `event_time` is absent.
    public let eventTime: Date?

    /// `type` as a known kind, or nil for a type this code does not know.
    public var kind: Kind? { Kind(rawValue: type) }

    public init(type: String, sub: String, email: String?, isPrivateEmail: Bool?, eventTime: Date?) {
        self.type = type
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
        self.eventTime = eventTime
    }

    /// Values above this are milliseconds since 1970; at or below, seconds.
    public static let millisecondsThreshold = 100_000_000_000

    /// Decodes the `events` claim value.
    /// - Throws: `JWTVerificationError` `.malformed` naming the field (`claim events`,
    ///   `claim events type`, ...) when the shape is not one of those above.
    static func decode(_ value: JSONValue) throws(JWTVerificationError) -> NotificationEvent {
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
        var type = rawType.trimmingCharacters(in: .whitespaces).lowercased()
        if type == "account-deleted" { type = Kind.accountDelete.rawValue }
        var eventTime: Date?
        if let raw = try reader.integer("event_time", allowString: true) {
            guard raw >= 0 else { throw JWTVerificationError(.malformed, "claim events event_time: negative") }
            eventTime = raw > millisecondsThreshold
                ? Date(timeIntervalSince1970: Double(raw) / 1000)
                : Date(timeIntervalSince1970: Double(raw))
        }
        return NotificationEvent(
            type: type,
            sub: sub,
            email: try reader.string("email"),
            isPrivateEmail: try reader.bool("is_private_email"),
            eventTime: eventTime
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
        if let eventTime {
            let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
            try container.encode(eventTime.formatted(format), forKey: .eventTime)
        }
    }
}
