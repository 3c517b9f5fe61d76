import Foundation
import SIWACore

/// Builds the claims of a server-to-server notification the way Apple sends them
/// (apple-api.md §8.3), in either shape real traffic and the documentation disagree on:
/// `events` as a JSON object or as a JSON-encoded string; `event_time` in seconds or
/// milliseconds; `is_private_email` as a bool or a string.
public struct NotificationSpec: Sendable, Equatable {
    public enum Encoding: String, Sendable, CaseIterable { case object, string }
    public enum TimeUnit: String, Sendable, CaseIterable { case seconds = "s", milliseconds = "ms" }

    /// `email-disabled`, `email-enabled`, `consent-revoked`, `account-delete` (or anything, to test rejection).
    public var type: String
    public var sub: String
    /// The `aud` claim (the app's client id).
    public var clientID: String
    public var email: String?
    /// Sent as the JSON value given: a bool, a string such as `"true"`, or raw JSON such as `1`.
    public var isPrivateEmail: PrivateEmailFlag?
    public var encoding: Encoding
    public var eventTimeUnit: TimeUnit
    /// Seconds since 1970; default: `iat`.
    public var eventTime: Double?
    /// Default: a random UUID.
    public var jti: String?
    /// Seconds since 1970; defaults: now, and `iat` + 300.
    public var iat: Int?
    public var exp: Int?
    /// Default `https://appleid.apple.com`.
    public var iss: String?

    public enum PrivateEmailFlag: Sendable, Equatable {
        case bool(Bool)
        case string(String)
        /// Any JSON text, sent verbatim: `1`, `2`, `null`, `{"a":1}` (shapes a lenient reader must survive).
        case json(String)
    }

    public init(type: String, sub: String, clientID: String, email: String? = nil, isPrivateEmail: PrivateEmailFlag? = nil,
                encoding: Encoding = .string, eventTimeUnit: TimeUnit = .milliseconds, eventTime: Double? = nil,
                jti: String? = nil, iat: Int? = nil, exp: Int? = nil, iss: String? = nil) {
        self.type = type
        self.sub = sub
        self.clientID = clientID
        self.email = email
        self.isPrivateEmail = isPrivateEmail
        self.encoding = encoding
        self.eventTimeUnit = eventTimeUnit
        self.eventTime = eventTime
        self.jti = jti
        self.iat = iat
        self.exp = exp
        self.iss = iss
    }

    /// The claims as JSON object text; `now` is seconds since 1970.
    func claimsJSON(now: Double) -> String {
        let iat = self.iat ?? Int(now)
        let exp = self.exp ?? iat + 300
        let seconds = eventTime ?? Double(iat)
        let time = eventTimeUnit == .milliseconds ? String(Int64((seconds * 1000).rounded())) : String(Int64(seconds))
        var event = "{\"type\":\(JSONText.quote(type)),\"sub\":\(JSONText.quote(sub)),\"event_time\":\(time)"
        if let email { event += ",\"email\":\(JSONText.quote(email))" }
        switch isPrivateEmail {
        case .bool(let flag)?: event += ",\"is_private_email\":\(flag)"
        case .string(let text)?: event += ",\"is_private_email\":\(JSONText.quote(text))"
        case .json(let text)?: event += ",\"is_private_email\":\(text)"
        case nil: break
        }
        event += "}"
        let events = encoding == .object ? event : JSONText.quote(event)
        return "{\"iss\":\(JSONText.quote(iss ?? "https://appleid.apple.com")),\"aud\":\(JSONText.quote(clientID)),"
            + "\"iat\":\(iat),\"exp\":\(exp),\"jti\":\(JSONText.quote(jti ?? UUID().uuidString.lowercased())),"
            + "\"events\":\(events)}"
    }
}

extension SandboxServer {
    /// Signs notifications with the current key (the `kid` in `/auth/keys`).
    /// - Throws: `SandboxStartError` when the server is not running; signing errors.
    public func signNotifications(_ specs: [NotificationSpec]) throws -> [String] {
        guard let keys = signingKeys else { throw SandboxStartError(description: "sandbox is not running") }
        let now = model.now
        return try specs.map { try keys.sign(claimsJSON: $0.claimsJSON(now: now)) }
    }

    /// Makes a new signing key (same size as the current one); the old keys stay published until
    /// `retireKeys()`. With `publish: false` the new key signs but is not in `/auth/keys` until
    /// `publishKeys()` (a notification signed with a `kid` not yet published). Returns the new `kid`.
    @discardableResult
    public func rotateKeys(publish: Bool = true) throws -> String {
        guard let keys = signingKeys else { throw SandboxStartError(description: "sandbox is not running") }
        let next = try SandboxSigningKey.generate(bits: configuration.rsaBits)
        keys.rotate(to: next, publish: publish)
        return next.keyID
    }

    /// Publishes a signing key rotated in with `publish: false`.
    public func publishKeys() {
        signingKeys?.publish()
    }

    /// Stops publishing every key but the signing one. Returns the key ids removed.
    @discardableResult
    public func retireKeys() -> [String] {
        signingKeys?.retire() ?? []
    }

    /// Key ids in `/auth/keys`, newest (signing) first.
    public var publishedKIDs: [String] { signingKeys?.publishedKIDs ?? [] }
}
