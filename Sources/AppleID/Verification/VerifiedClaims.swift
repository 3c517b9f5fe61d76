import Foundation

/// The claims of a token `JWTVerifier` accepted, normalised (apple-api.md §7.2 and §8.3).
/// Times are whole seconds since 1970 (`exp`/`iat` above 10^11 are refused as milliseconds).
/// Boolean claims are read leniently (`true`/`false`, `"true"`/`"false"` in any case, `1`/`0`,
/// `"1"`/`"0"`); another shape reads as `false` and adds a line to `warnings`, never a
/// rejection. Absent claims are nil and omitted from the JSON encoding, which uses Apple's claim
/// names (`email_verified`, `transfer_sub`, ...); `warnings` is encoded only when non-empty.
/// `iat`, `exp` and `real_user_status` also accept numeric strings. An id_token (no `events`)
/// must carry a non-empty `sub`; a notification names its user in `events.sub` instead.
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
    /// Claims read with a fallback, e.g. `claim is_private_email: the string "yes" is not a
    /// boolean; read as false`. Safe to log (values quoted as `ClaimReader.shown` does).
    public let warnings: [String]

    /// Memberwise, for tests and in-memory twins of code that consumes verified claims.
    public init(
        iss: String, aud: [String], sub: String?, iat: Int?, exp: Int, email: String?,
        emailVerified: Bool?, isPrivateEmail: Bool?, transferSub: String?, nonce: String?,
        nonceSupported: Bool?, realUserStatus: Int?, jti: String?, events: NotificationEvent?,
        warnings: [String] = []
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
        self.warnings = warnings
    }

    private enum CodingKeys: String, CodingKey {
        case iss, aud, sub, iat, exp, email, nonce, jti, events, warnings
        case emailVerified = "email_verified"
        case isPrivateEmail = "is_private_email"
        case transferSub = "transfer_sub"
        case nonceSupported = "nonce_supported"
        case realUserStatus = "real_user_status"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(iss, forKey: .iss)
        try c.encode(aud, forKey: .aud)
        try c.encodeIfPresent(sub, forKey: .sub)
        try c.encodeIfPresent(iat, forKey: .iat)
        try c.encode(exp, forKey: .exp)
        try c.encodeIfPresent(email, forKey: .email)
        try c.encodeIfPresent(emailVerified, forKey: .emailVerified)
        try c.encodeIfPresent(isPrivateEmail, forKey: .isPrivateEmail)
        try c.encodeIfPresent(transferSub, forKey: .transferSub)
        try c.encodeIfPresent(nonce, forKey: .nonce)
        try c.encodeIfPresent(nonceSupported, forKey: .nonceSupported)
        try c.encodeIfPresent(realUserStatus, forKey: .realUserStatus)
        try c.encodeIfPresent(jti, forKey: .jti)
        try c.encodeIfPresent(events, forKey: .events)
        if !warnings.isEmpty { try c.encode(warnings, forKey: .warnings) }
    }

    /// Reads every claim except the checks `JWTVerifier` makes (issuer, audience, times, nonce).
    /// - Throws: `JWTVerificationError` `.malformed` naming the claim whose shape is wrong, `exp`
    ///   missing, `exp`/`iat` above 10^11 (milliseconds), or `sub` missing or empty in an
    ///   id_token (a token without `events`).
    static func decode(_ members: [String: JSONValue]) throws(JWTVerificationError) -> VerifiedClaims {
        let reader = ClaimReader(members: members, context: "claim")
        guard let exp = try reader.seconds("exp") else {
            throw JWTVerificationError(.malformed, "claim exp: missing")
        }
        let iat = try reader.seconds("iat")
        var warnings: [String] = []
        let events = try members["events"].flatMap { value throws(JWTVerificationError) in
            value == .null ? nil : try NotificationEvent.decode(value, warnings: &warnings)
        }
        let sub = try reader.string("sub")
        if events == nil {
            guard let sub else { throw JWTVerificationError(.malformed, "claim sub: missing; an id_token must name its user") }
            guard !sub.isEmpty else { throw JWTVerificationError(.malformed, "claim sub: empty; an id_token must name its user") }
        }
        return VerifiedClaims(
            iss: try reader.string("iss") ?? "",
            aud: try reader.audience(),
            sub: sub,
            iat: iat,
            exp: exp,
            email: try reader.string("email"),
            emailVerified: reader.lenientBool("email_verified", warnings: &warnings),
            isPrivateEmail: reader.lenientBool("is_private_email", warnings: &warnings),
            transferSub: try reader.string("transfer_sub"),
            nonce: try reader.string("nonce"),
            nonceSupported: reader.lenientBool("nonce_supported", warnings: &warnings),
            realUserStatus: try reader.integer("real_user_status", allowString: true),
            jti: try reader.string("jti"),
            events: events,
            warnings: warnings
        )
    }
}
