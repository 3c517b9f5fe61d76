extension AppleIDClient {
    /// Exchanges an authorization code: `POST /auth/token` with `grant_type=authorization_code`
    /// (apple-api.md §2.2). The code is single-use and valid for five minutes, so nothing here
    /// retries: the caller decides, knowing how old the code is.
    /// - Parameters:
    ///   - code: the `authorizationCode` the app received; sent once, never logged.
    ///   - redirectURI: sent only when given: "include the `redirect_uri` parameter only if the
    ///     application provided a `redirect_uri` in the initial authorization request" (Apple).
    /// - Returns: the TokenResponse, with `refreshToken` and `idToken` both present.
    /// - Throws: `AppleIDError`: `invalid_grant` (permanent) when the code expired, was used, or
    ///   was issued to another client or redirect URI; `invalid_client` (configuration); a 200
    ///   without `refresh_token` or `id_token` is permanent (`malformed success body: ...`).
    public func exchangeAuthorizationCode(_ code: String, redirectURI: String?) async throws(AppleIDError) -> TokenResponse {
        var fields = [("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI, !redirectURI.isEmpty { fields.append(("redirect_uri", redirectURI)) }
        let response = try await post(.token, fields)
        let tokens = try TokenResponse.parse(try parseObject(response), status: response.status)
        guard tokens.refreshToken != nil else { throw .malformedSuccess(response.status, "missing refresh_token") }
        guard tokens.idToken != nil else { throw .malformedSuccess(response.status, "missing id_token") }
        return tokens
    }
}
