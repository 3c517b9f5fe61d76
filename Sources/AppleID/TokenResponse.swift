/// Apple's TokenResponse (https://developer.apple.com/documentation/signinwithapplerestapi/tokenresponse),
/// decoded leniently: `expires_in` may be a number or a numeric string (default 3600 when
/// absent); `token_type` is compared case-insensitively and must be `bearer` when present;
/// `refresh_token` and `id_token` are optional. `access_token` is required, except in the answer
/// to a refresh-token validation: there the 200 itself is the verdict (the refresh token is
/// good), so a missing `access_token` leaves it empty with a line in `warnings`.
/// `description` hides every token.
public struct TokenResponse: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The access token; empty only when a refresh validation's 200 had none (see `warnings`).
    public let accessToken: String
    /// As sent (e.g. "Bearer"); always equal to "bearer" ignoring case.
    public let tokenType: String
    /// Access-token lifetime in whole seconds, as Apple sends it (`expires_in`).
    public let expiresIn: Int
    /// Only on the authorization_code grant; absent when validating a refresh token.
    public let refreshToken: String?
    /// The id_token JWT; optional (sometimes missing on refresh).
    public let idToken: String?
    /// What was accepted although unexpected, safe to log, e.g. `200 without access_token`.
    public let warnings: [String]

    public init(accessToken: String, tokenType: String = "Bearer", expiresIn: Int = 3600, refreshToken: String? = nil,
                idToken: String? = nil, warnings: [String] = []) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.warnings = warnings
    }

    /// The warning for a refresh validation's 200 without `access_token`.
    public static let missingAccessTokenWarning = "Apple answered 200 without access_token; the refresh token was accepted, "
        + "so it counts as valid"

    /// Parses the JSON object's members (`JSONObjectScanner`) of a 2xx answer with HTTP `status`.
    /// - Parameter requireAccessToken: false for a refresh-token validation, where a missing
    ///   `access_token` is a warning instead of an error.
    /// - Throws: `AppleIDError` (permanent, `malformed success body: <reason>`) when a required
    ///   field is missing or has the wrong shape.
    static func parse(_ object: JSONObjectMembers, status: Int, requireAccessToken: Bool = true) throws(AppleIDError) -> TokenResponse {
        var warnings: [String] = []
        let accessToken = LenientJSON.nonEmptyString(object["access_token"]) ?? ""
        if accessToken.isEmpty {
            guard !requireAccessToken else { throw .malformedSuccess(status, "missing access_token") }
            warnings.append(missingAccessTokenWarning)
        }
        // A token_type that is not a string reads as absent, as before.
        let tokenType = LenientJSON.string(object["token_type"]) ?? "Bearer"
        guard tokenType.lowercased() == "bearer" else {
            throw .malformedSuccess(status, "token_type is not bearer")
        }
        var expiresIn = 3600
        if let raw = object["expires_in"] {
            guard let value = LenientJSON.int(raw), value >= 0 else {
                throw .malformedSuccess(status, "expires_in is not a non-negative integer")
            }
            expiresIn = value
        }
        return TokenResponse(
            accessToken: accessToken,
            tokenType: tokenType,
            expiresIn: expiresIn,
            refreshToken: LenientJSON.nonEmptyString(object["refresh_token"]),
            idToken: LenientJSON.nonEmptyString(object["id_token"]),
            warnings: warnings
        )
    }

    public var description: String {
        "TokenResponse(access_token: \(accessToken.isEmpty ? "absent" : "present"), token_type: \(tokenType), expires_in: \(expiresIn)s, "
            + "refresh_token: \(refreshToken == nil ? "absent" : "present"), id_token: \(idToken == nil ? "absent" : "present"))"
    }

    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// The recipient team's view of a migrated user (`/auth/usermigrationinfo` with `transfer_sub`).
public struct MigratedUser: Sendable, Equatable {
    /// The recipient team-scoped user identifier.
    public let sub: String
    /// The recipient team's private relay address; nil unless the user used one.
    public let email: String?
    /// Whether `email` is a private relay address; nil when Apple omitted it. Accepts a JSON
    /// bool, "true"/"false", or 0/1.
    public let isPrivateEmail: Bool?

    public init(sub: String, email: String?, isPrivateEmail: Bool?) {
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
    }

    /// Parses the JSON object's members (`JSONObjectScanner`) of a 2xx answer with HTTP `status`.
    /// - Throws: `AppleIDError` (permanent, `malformed success body: missing sub`).
    static func parse(_ object: JSONObjectMembers, status: Int) throws(AppleIDError) -> MigratedUser {
        guard let sub = LenientJSON.nonEmptyString(object["sub"]) else {
            throw .malformedSuccess(status, "missing sub")
        }
        return MigratedUser(sub: sub, email: LenientJSON.nonEmptyString(object["email"]),
                            isPrivateEmail: LenientJSON.bool(object["is_private_email"]))
    }
}
