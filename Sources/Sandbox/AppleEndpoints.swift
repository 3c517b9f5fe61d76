import Foundation
import MicroHTTP
import SIWACrypto
import SIWACore

/// The Apple surface: `/auth/token`, `/auth/revoke`, `/auth/keys` (apple-api.md §2, §3, §6).
final class AppleEndpoints: Sendable {
    let model: SandboxModel
    /// The RS256 keys that sign id_tokens and notifications and make up the JWKS.
    let keySet: SigningKeySet
    /// Include a signed id_token in refresh-token validation answers.
    let refreshIDToken: Bool

    static let tokenParameters: Set<String> = ["client_id", "client_secret", "grant_type", "refresh_token",
                                               "code", "redirect_uri", "scope"]
    static let revokeParameters: Set<String> = ["client_id", "client_secret", "token", "token_type_hint"]
    /// id_token lifetime, seconds (exp - iat). Apple's real value varies (apple-api.md §7.3).
    static let idTokenLifetime = 600
    /// Access and bearer token lifetime, seconds.
    static let accessTokenLifetime = 3600

    /// Signed refresh-answer id_tokens kept per user for a short time (`IDTokenCache`).
    let idTokens: IDTokenCache

    /// - Parameter idTokenReuseSeconds: how long a user's signed refresh id_token is handed out
    ///   again (0: every answer signs a new one; at most half of `idTokenLifetime`).
    init(model: SandboxModel, signer: any RS256Signing, refreshIDToken: Bool = true, idTokenReuseSeconds: Int = 0) {
        self.model = model
        self.keySet = SigningKeySet(signer)
        self.refreshIDToken = refreshIDToken
        self.idTokens = IDTokenCache(reuseSeconds: idTokenReuseSeconds, lifetime: Self.idTokenLifetime)
    }

    /// `GET /auth/keys`.
    func keys() -> HTTPServerResponse {
        .appleJSON(keySet.jwks, noStore: false)
    }

    /// An early error answer from a validation step.
    struct Rejection: Error {
        var response: HTTPServerResponse
        init(_ code: String, _ reason: String) { response = .appleError(code, reason: reason) }
    }

    /// Content type, strict form parsing and allowed parameters.
    /// - Parameter parsed: the body already parsed by the caller (each request is parsed once), or nil.
    func form(_ req: HTTPServerRequest, allowed: Set<String>, parsed: FormBody? = nil) throws(Rejection) -> FormBody {
        guard req.mediaType == "application/x-www-form-urlencoded" else { throw Rejection("invalid_request", "content_type") }
        let form: FormBody
        if let parsed {
            form = parsed
        } else {
            do {
                form = try FormBody(req.body)
            } catch {
                throw Rejection("invalid_request", "form_encoding")
            }
        }
        if form.hasName(outside: allowed) {
            throw Rejection("invalid_request", "unsupported_parameter")
        }
        return form
    }

    func authenticate(_ form: FormBody, now: Double,
                              tally: inout RequestTally) throws(Rejection) -> SandboxModel.VerifiedSecret {
        guard let clientID = form["client_id"], !clientID.isEmpty,
              let secret = form["client_secret"], !secret.isEmpty else {
            throw Rejection("invalid_request", "missing_client_credentials")
        }
        switch model.authenticate(clientID: clientID, secret: secret, now: now, tally: &tally) {
        case .success(let verified): return verified
        case .failure(let why): throw Rejection("invalid_client", why.rawValue)
        }
    }

    /// Runs `body`, turning a `Rejection` into its response.
    func answer(_ body: () throws(Rejection) -> HTTPServerResponse) -> HTTPServerResponse {
        do { return try body() } catch { return error.response }
    }

    /// `POST /auth/token`: `refresh_token`, `client_credentials` (scope `user.migration`) and
    /// `authorization_code` (codes from `/__sandbox/authorize`; see `authorizationCode`).
    /// - Parameter parsed: the body as `SandboxHandler` parsed it, or nil.
    func token(_ req: HTTPServerRequest, parsed: FormBody? = nil, now: Double, tally: inout RequestTally) -> HTTPServerResponse {
        answer { () throws(Rejection) in try tokenChecked(req, parsed: parsed, now: now, tally: &tally) }
    }

    private func tokenChecked(_ req: HTTPServerRequest, parsed: FormBody?, now: Double,
                              tally: inout RequestTally) throws(Rejection) -> HTTPServerResponse {
        let form = try self.form(req, allowed: Self.tokenParameters, parsed: parsed)
        guard let grantType = form["grant_type"], !grantType.isEmpty else {
            return .appleError("invalid_request", reason: "missing_grant_type")
        }
        let client = try authenticate(form, now: now, tally: &tally)
        switch grantType {
        case "refresh_token":
            guard let refresh = form["refresh_token"], !refresh.isEmpty else {
                if form["code"] != nil { return .appleError("unsupported_grant_type", reason: "code_with_refresh_grant") }
                return .appleError("invalid_request", reason: "missing_refresh_token")
            }
            guard let sub = model.validateRefresh(token: refresh, teamID: client.teamID, clientID: client.clientID) else {
                return .appleError("invalid_grant", reason: "refresh_token_invalid")
            }
            return refreshResponse(teamID: client.teamID, clientID: client.clientID, sub: sub, now: now, tally: &tally)
        case "client_credentials":
            guard form["scope"] == "user.migration" else { return .appleError("invalid_scope", reason: "scope") }
            let token = model.mintBearer(teamID: client.teamID, clientID: client.clientID, scope: "user.migration",
                                         expiresAt: now + model.clockOffset + Double(Self.accessTokenLifetime))
            tally.bearerMinted = true
            return .appleJSON("{\"access_token\":\"\(token)\",\"token_type\":\"Bearer\",\"expires_in\":\(Self.accessTokenLifetime)}")
        case "authorization_code":
            return authorizationCode(form, client: client, now: now, tally: &tally)
        default:
            return .appleError("unsupported_grant_type", reason: "grant_type")
        }
    }

    private func refreshResponse(teamID: String, clientID: String, sub: String, now: Double,
                                 tally: inout RequestTally) -> HTTPServerResponse {
        let access = TokenMint.accessToken()
        model.noteIssuedAccessToken(access)
        tally.accessMinted = true
        guard refreshIDToken else { return .appleJSON(bytes: Self.refreshBody(access: access, idToken: nil)) }
        guard let idToken = refreshIDToken(teamID: teamID, clientID: clientID, sub: sub, now: Int(now), tally: &tally) else {
            return .plain("id_token signing failed\n", status: 500)
        }
        return .appleJSON(bytes: Self.refreshBody(access: access, idToken: idToken))
    }

    /// A refresh answer's body, written as bytes in one buffer (every validation makes one):
    /// `{"access_token":"…","token_type":"Bearer","expires_in":3600}`, plus `,"id_token":"…"` before
    /// the closing brace when `idToken` is given. Both tokens are JSON-safe as made (hex, base64url, dots).
    static func refreshBody(access: String, idToken: String?) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(96 + access.utf8.count + (idToken?.utf8.count ?? 0))
        body.append(contentsOf: #"{"access_token":""#.utf8)
        body.append(contentsOf: access.utf8)
        body.append(contentsOf: #"","token_type":"Bearer","expires_in":"#.utf8)
        body.append(contentsOf: String(accessTokenLifetime).utf8)
        if let idToken {
            body.append(contentsOf: #","id_token":""#.utf8)
            body.append(contentsOf: idToken.utf8)
            body.append(UInt8(ascii: "\""))
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// The user's id_token for a refresh answer at `now` (seconds since 1970): the one signed for
    /// them within the reuse window (`IDTokenCache`), else a new one (`iat` = `auth_time` = now,
    /// `exp` = now + `idTokenLifetime`). Nil when signing fails.
    private func refreshIDToken(teamID: String, clientID: String, sub: String, now: Int, tally: inout RequestTally) -> String? {
        let key = IDTokenCache.Key(teamID: teamID, clientID: clientID, sub: sub)
        if let reused = idTokens.reusable(key, kid: keySet.currentKID, now: now) {
            tally.idTokenReused = true
            return reused
        }
        guard let signed = try? keySet.signed(claimsJSON: Self.idTokenClaims(clientID: clientID, sub: sub, now: now)) else { return nil }
        tally.idTokenSigned = true
        idTokens.keep(signed.token, kid: signed.kid, iat: now, for: key)
        return signed.token
    }

    /// `POST /auth/revoke`: always `200` with an empty body once the client authenticates, whether or
    /// not the token exists ("revoked successfully or was previously invalid", apple-api.md §3).
    func revoke(_ req: HTTPServerRequest, parsed: FormBody? = nil, now: Double, tally: inout RequestTally) -> HTTPServerResponse {
        answer { () throws(Rejection) in try revokeChecked(req, parsed: parsed, now: now, tally: &tally) }
    }

    private func revokeChecked(_ req: HTTPServerRequest, parsed: FormBody?, now: Double,
                               tally: inout RequestTally) throws(Rejection) -> HTTPServerResponse {
        let form = try self.form(req, allowed: Self.revokeParameters, parsed: parsed)
        guard let token = form["token"], !token.isEmpty else { return .appleError("invalid_request", reason: "missing_token") }
        if let hint = form["token_type_hint"], hint != "refresh_token", hint != "access_token" {
            return .appleError("invalid_request", reason: "token_type_hint")
        }
        let client = try authenticate(form, now: now, tally: &tally)
        model.revoke(token: token, teamID: client.teamID, clientID: client.clientID)
        tally.revoked = true
        return .emptyOK()
    }
}
