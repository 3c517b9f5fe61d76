import Foundation

/// The claims of a token `JWTVerifier` accepted, normalised (apple-api.md §7.2 and §8.3).
/// Times are whole seconds since 1970. Boolean claims are decoded from `true`/`false` or
/// `"true"`/`"false"`. Absent claims are nil and omitted from the JSON encoding, which uses
/// Apple's claim names (`email_verified`, `transfer_sub`, ...). Boolean strings are matched
/// case-insensitively; `iat`, `exp` and `real_user_status` also accept numeric strings.
public struct VerifiedClaims: Sendable, Equatable, Encodable {
    /// Always `https://appleid.apple.com`.
    public let iss: String
    /// The audience as sent (one or more client ids); at least one is configured.
    public let aud: [String]
    /// Team-scoped user id (id_tokens; notifications carry it in `events`).
    public let sub: String?
    public let iat: Int?
    public let exp: Int
    public let email: String?
    public let emailVerified: Bool?
    public let isPrivateEmail: Bool?
    /// Present only during an app transfer's 60-day window.
    public let transferSub: String?
    /// As in the token (native apps put SHA-256 hex of their raw nonce here).
    public let nonce: String?
    public let nonceSupported: Bool?
    /// 0 unsupported, 1 unknown, 2 likely real.
    public let realUserStatus: Int?
    /// Token id (notifications; the de-duplication key).
    public let jti: String?
    /// The notification event, for server-to-server notifications.
    public let events: NotificationEvent?

    /// Memberwise, for tests and in-memory twins of code that consumes verified claims.
    public init(
        iss: String, aud: [String], sub: String?, iat: Int?, exp: Int, email: String?,
        emailVerified: Bool?, isPrivateEmail: Bool?, transferSub: String?, nonce: String?,
        nonceSupported: Bool?, realUserStatus: Int?, jti: String?, events: NotificationEvent?
    ) {
        self.iss = iss
        self.aud = aud
        self.sub = sub
        self.iat = iat
        self.exp = exp
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.transferSub = transferSub
        self.nonce = nonce
        self.nonceSupported = nonceSupported
        self.realUserStatus = realUserStatus
        self.jti = jti
        self.events = events
    }

    private enum CodingKeys: String, CodingKey {
        case iss, aud, sub, iat, exp, email, nonce, jti, events
        case emailVerified = "email_verified"
        case isPrivateEmail = "is_private_email"
        case transferSub = "transfer_sub"
        case nonceSupported = "nonce_supported"
        case realUserStatus = "real_user_status"
    }

    /// Reads every claim except the checks `JWTVerifier` makes (issuer, audience, times, nonce).
    /// - Throws: `JWTVerificationError` `.malformed` naming the claim whose shape is wrong, or
    ///   `exp` missing.
    static func decode(_ members: [String: JSONValue]) throws(JWTVerificationError) -> VerifiedClaims {
        let reader = ClaimReader(members: members, context: "claim")
        guard let exp = try reader.integer("exp", allowString: true) else {
            throw JWTVerificationError(.malformed, "claim exp: missing")
        }
        return VerifiedClaims(
            iss: try reader.string("iss") ?? "",
            aud: try reader.audience(),
            sub: try reader.string("sub"),
            iat: try reader.integer("iat", allowString: true),
            exp: exp,
            email: try reader.string("email"),
            emailVerified: try reader.bool("email_verified"),
            isPrivateEmail: try reader.bool("is_private_email"),
            transferSub: try reader.string("transfer_sub"),
            nonce: try reader.string("nonce"),
            nonceSupported: try reader.bool("nonce_supported"),
            realUserStatus: try reader.integer("real_user_status", allowString: true),
            jti: try reader.string("jti"),
            events: try members["events"].flatMap { value throws(JWTVerificationError) in
                value == .null ? nil : try NotificationEvent.decode(value)
            }
        )
    }
}
