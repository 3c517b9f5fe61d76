import MicroHTTP
import SIWACore

extension AppleEndpoints {
    /// `POST /auth/token` with `grant_type=authorization_code` (apple-api.md §2.2), after the
    /// client authenticated: the code must have been issued by `/__sandbox/authorize` to this team
    /// and client, be unused and at most 5 minutes old on the sandbox clock, and come with the
    /// authorization's `redirect_uri` (or none when it had none); else `invalid_grant` with the
    /// reason in `X-Sandbox-Reason` (`unknown_code`, `code_used`, `code_expired`,
    /// `client_mismatch`, `redirect_uri_mismatch`). Success is Apple's TokenResponse with a new
    /// refresh token (registered, so refresh validation finds it valid) and a signed `id_token`.
    func authorizationCode(_ form: FormBody, client: SandboxModel.VerifiedSecret, now: Double,
                           tally: inout RequestTally) -> HTTPServerResponse {
        guard let code = form["code"], !code.isEmpty else { return .appleError("invalid_request", reason: "missing_code") }
        if form["refresh_token"] != nil { return .appleError("invalid_request", reason: "refresh_token_with_code_grant") }
        let redirectURI = form["redirect_uri"].flatMap { $0.isEmpty ? nil : $0 }
        let refresh = "r" + TokenMint.hex(16) + ".0.sbx." + TokenMint.hex(8)
        let record: AuthorizationRegistry.Code
        switch model.exchange(code: code, teamID: client.teamID, clientID: client.clientID, redirectURI: redirectURI,
                              now: now + model.clockOffset, refreshToken: refresh) {
        case .success(let found): record = found
        case .failure(let refusal): return .appleError("invalid_grant", reason: refusal.rawValue)
        }
        let access = TokenMint.accessToken()
        model.noteIssuedAccessToken(access)
        tally.accessMinted = true
        tally.codeExchanged = true
        let iat = Int(now)
        let claims = "{\"iss\":\"https://appleid.apple.com\",\"aud\":\(JSONText.quote(client.clientID)),"
            + "\"exp\":\(iat + Self.idTokenLifetime),\"iat\":\(iat),\"sub\":\(JSONText.quote(record.sub)),"
            + "\"at_hash\":\(JSONText.quote(TokenMint.hex(8))),\"email\":\(JSONText.quote(record.email)),"
            + "\"email_verified\":true,\"is_private_email\":\(record.isPrivateEmail),\"auth_time\":\(iat)}"
        guard let idToken = try? keySet.sign(claimsJSON: claims) else {
            return .plain("id_token signing failed\n", status: 500)
        }
        tally.idTokenSigned = true
        return .appleJSON("{\"access_token\":\"\(access)\",\"token_type\":\"Bearer\",\"expires_in\":\(Self.accessTokenLifetime),"
            + "\"refresh_token\":\"\(refresh)\",\"id_token\":\"\(idToken)\"}")
    }
}
