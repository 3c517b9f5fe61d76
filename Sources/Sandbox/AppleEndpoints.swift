import Foundation
import MicroHTTP
import SIWACrypto

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

    init(model: SandboxModel, signer: any RS256Signing, refreshIDToken: Bool = true) {
        self.model = model
        self.keySet = SigningKeySet(signer)
        self.refreshIDToken = refreshIDToken
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
    func form(_ req: HTTPServerRequest, allowed: Set<String>) throws(Rejection) -> FormBody {
        guard req.mediaType == "application/x-www-form-urlencoded" else { throw Rejection("invalid_request", "content_type") }
        let form: FormBody
        do {
            form = try FormBody(req.body)
        } catch {
            throw Rejection("invalid_request", "form_encoding")
        }
        if form.names.contains(where: { !allowed.contains($0) }) {
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
    func token(_ req: HTTPServerRequest, now: Double, tally: inout RequestTally) -> HTTPServerResponse {
        answer { () throws(Rejection) in try tokenChecked(req, now: now, tally: &tally) }
    }

    private func tokenChecked(_ req: HTTPServerRequest, now: Double,
                              tally: inout RequestTally) throws(Rejection) -> HTTPServerResponse {
        let form = try self.form(req, allowed: Self.tokenParameters)
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
            return refreshResponse(clientID: client.clientID, sub: sub, now: now, tally: &tally)
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

    private func refreshResponse(clientID: String, sub: String, now: Double,
                                 tally: inout RequestTally) -> HTTPServerResponse {
        let access = TokenMint.accessToken()
        model.noteIssuedAccessToken(access)
        tally.accessMinted = true
        guard refreshIDToken else {
            return .appleJSON("{\"access_token\":\"\(access)\",\"token_type\":\"Bearer\",\"expires_in\":\(Self.accessTokenLifetime)}")
        }
        let iat = Int(now)
        let claims = "{\"iss\":\"https://appleid.apple.com\",\"aud\":\(JSONText.quote(clientID)),"
            + "\"exp\":\(iat + Self.idTokenLifetime),\"iat\":\(iat),\"sub\":\(JSONText.quote(sub)),\"auth_time\":\(iat)}"
        guard let idToken = try? keySet.sign(claimsJSON: claims) else {
            return .plain("id_token signing failed\n", status: 500)
        }
        tally.idTokenSigned = true
        return .appleJSON("{\"access_token\":\"\(access)\",\"token_type\":\"Bearer\",\"expires_in\":\(Self.accessTokenLifetime),\"id_token\":\"\(idToken)\"}")
    }

    /// `POST /auth/revoke`: always `200` with an empty body once the client authenticates, whether or
    /// not the token exists ("revoked successfully or was previously invalid", apple-api.md §3).
    func revoke(_ req: HTTPServerRequest, now: Double, tally: inout RequestTally) -> HTTPServerResponse {
        answer { () throws(Rejection) in try revokeChecked(req, now: now, tally: &tally) }
    }

    private func revokeChecked(_ req: HTTPServerRequest, now: Double,
                               tally: inout RequestTally) throws(Rejection) -> HTTPServerResponse {
        let form = try self.form(req, allowed: Self.revokeParameters)
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
