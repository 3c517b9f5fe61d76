import SIWACrypto
import SIWACore

/// The sandbox's authorization codes (apple-api.md §2.2): issued by the admin endpoint that plays
/// the device (`POST /__sandbox/authorize`), exchanged once at `/auth/token` with
/// `grant_type=authorization_code`. Held by `SandboxModel.authorizations`.
struct AuthorizationRegistry {
    struct Code {
        var teamID: String
        var clientID: String
        var sub: String
        /// The `redirect_uri` of the authorization request; the exchange must send the same (or
        /// none when this is nil).
        var redirectURI: String?
        /// Seconds since 1970 on the sandbox clock (wall clock + `clockOffset`).
        var issuedAt: Double
        var used = false
        var email: String
        var isPrivateEmail: Bool
    }

    var codes: [String: Code] = [:]

    /// An authorization code lives 5 minutes and works once (apple-api.md §2.2).
    static let codeLifetime: Double = 300
    /// Codes kept; past it, codes that are used or expired are forgotten.
    static let limit = 200_000
}

/// What the device asks Apple for in one authorization: the admin endpoint's input.
public struct SandboxAuthorizationRequest: Sendable, Equatable {
    public var teamID: String
    public var clientID: String
    /// The user's team-scoped id; nil makes a new user.
    public var sub: String?
    /// The raw nonce the app chose; the token carries its SHA-256 hex (native apps) unless
    /// `nonceHashed` is false (web flows pass it through).
    public var nonce: String?
    public var nonceHashed = true
    public var redirectURI: String?
    /// Default: a private relay address derived from the sub when `privateEmail`, else
    /// `<sub prefix>@example.com`.
    public var email: String?
    public var privateEmail = true
    /// 0 unsupported, 1 unknown, 2 likely real (default 2); nil leaves the claim out.
    public var realUserStatus: Int? = 2
    /// Put in the token as Apple does during an app transfer's 60-day window.
    public var transferSub: String?
    /// The token's `aud`; default `clientID` (tests of a wrong audience set another).
    public var audience: String?
    /// The token's `iat`, seconds since 1970; default now (wall clock).
    public var issuedAt: Int?
    /// `exp - iat`, seconds (default 600; apple-api.md §7.3: Apple's varies).
    public var lifetimeSeconds = 600

    public init(teamID: String, clientID: String, sub: String? = nil, nonce: String? = nil, redirectURI: String? = nil) {
        self.teamID = teamID
        self.clientID = clientID
        self.sub = sub
        self.nonce = nonce
        self.redirectURI = redirectURI
    }
}

/// What the device gets back: the identity token (RS256, signed with the sandbox's current key)
/// and the authorization code, for the app to hand to its server.
public struct SandboxAuthorization: Sendable, Equatable {
    public var identityToken: String
    public var code: String
    public var sub: String
    public var email: String
}

/// Why an authorization code was refused (Apple answers `invalid_grant`); the raw value is sent
/// in `X-Sandbox-Reason`.
enum CodeRefusal: String, Error {
    case unknown = "unknown_code", used = "code_used", expired = "code_expired"
    case clientMismatch = "client_mismatch", redirectMismatch = "redirect_uri_mismatch"
}

extension SandboxModel {
    /// Issues an identity token and an authorization code for `request`, as Apple does when the
    /// user approves the sign-in sheet.
    /// - Throws: `SandboxAdminError` naming an empty field; signing errors.
    func authorize(_ request: SandboxAuthorizationRequest, keys: SigningKeySet) throws -> SandboxAuthorization {
        for (name, value) in [("team_id", request.teamID), ("client_id", request.clientID)] where value.isEmpty {
            throw SandboxAdminError(field: name, reason: "must not be empty")
        }
        if let sub = request.sub, sub.isEmpty { throw SandboxAdminError(field: "sub", reason: "must not be empty (omit it for a new user)") }
        if let nonce = request.nonce, nonce.isEmpty { throw SandboxAdminError(field: "nonce", reason: "must not be empty") }
        guard (1...86_400 * 2).contains(request.lifetimeSeconds) else {
            throw SandboxAdminError(field: "lifetime_seconds", reason: "expected 1...172800")
        }
        let sub = request.sub ?? Self.newSub()
        let email = request.email ?? (request.privateEmail ? MigrationDerivation.relayEmail(user: sub, team: request.teamID)
                                                           : "user-\(sub.prefix(6))@example.com")
        let iat = request.issuedAt ?? Int(now)
        var claims = "{\"iss\":\"https://appleid.apple.com\",\"aud\":\(JSONText.quote(request.audience ?? request.clientID)),"
            + "\"exp\":\(iat + request.lifetimeSeconds),\"iat\":\(iat),\"sub\":\(JSONText.quote(sub)),"
            + "\"c_hash\":\(JSONText.quote(TokenMint.hex(8))),\"email\":\(JSONText.quote(email)),\"email_verified\":true,"
            + "\"is_private_email\":\(request.privateEmail),\"auth_time\":\(iat),\"nonce_supported\":true"
        if let nonce = request.nonce {
            claims += ",\"nonce\":\(JSONText.quote(request.nonceHashed ? Digest.sha256Hex(nonce) : nonce))"
        }
        if let status = request.realUserStatus { claims += ",\"real_user_status\":\(status)" }
        if let transferSub = request.transferSub { claims += ",\"transfer_sub\":\(JSONText.quote(transferSub))" }
        claims += "}"
        let token = try keys.sign(claimsJSON: claims)
        let code = "c" + TokenMint.hex(12) + ".0.sbx." + TokenMint.hex(8)
        let record = AuthorizationRegistry.Code(teamID: request.teamID, clientID: request.clientID, sub: sub,
                                                redirectURI: request.redirectURI, issuedAt: now + clockOffset, email: email,
                                                isPrivateEmail: request.privateEmail)
        authorizations.withLock { reg in
            if reg.codes.count >= AuthorizationRegistry.limit { Self.forgetSpent(&reg, now: record.issuedAt) }
            reg.codes[code] = record
        }
        counters.withLock { $0.authorizationsIssued += 1 }
        return SandboxAuthorization(identityToken: token, code: code, sub: sub, email: email)
    }

    /// Exchanges `code` once for `teamID`/`clientID`, checking `redirectURI` against the
    /// authorization's, at `now` (sandbox clock: wall clock + `clockOffset`). On success the
    /// new refresh token is registered (valid for refresh validation and revocation).
    func exchange(code: String, teamID: String, clientID: String, redirectURI: String?, now: Double,
                  refreshToken: String) -> Result<AuthorizationRegistry.Code, CodeRefusal> {
        let outcome: Result<AuthorizationRegistry.Code, CodeRefusal> = authorizations.withLock { reg in
            guard var record = reg.codes[code] else { return .failure(.unknown) }
            guard !record.used else { return .failure(.used) }
            guard record.teamID == teamID, record.clientID == clientID else { return .failure(.clientMismatch) }
            guard now <= record.issuedAt + AuthorizationRegistry.codeLifetime else { return .failure(.expired) }
            guard record.redirectURI == redirectURI else { return .failure(.redirectMismatch) }
            record.used = true
            reg.codes[code] = record
            return .success(record)
        }
        if case .success(let record) = outcome {
            registerRefreshTokens([SandboxRefreshToken(token: refreshToken, teamID: teamID, clientID: clientID, sub: record.sub)])
        }
        return outcome
    }

    /// A new team-scoped user id in Apple's shape (`000723.<32 hex>.0402`).
    static func newSub() -> String {
        let digits = SecureRandom.bytes(9).map { String($0 % 10) }
        return "0" + digits[0..<5].joined() + "." + TokenMint.hex(16) + "." + digits[5..<9].joined()
    }

    private static func forgetSpent(_ reg: inout AuthorizationRegistry, now: Double) {
        reg.codes = reg.codes.filter { !$0.value.used && now <= $0.value.issuedAt + AuthorizationRegistry.codeLifetime }
    }
}
