/// App-transfer identifier exchange, `POST /auth/usermigrationinfo` with a Bearer token from
/// `clientCredentialsToken()` (apple-api.md §4; Apple TN3159).
extension AppleIDClient {
    /// Sending team: user `sub` + recipient Team ID → `transfer_sub`.
    /// - Parameters:
    ///   - target: the **recipient** team's 10-character Team ID (not your own).
    ///   - accessToken: a `client_credentials` token for scope `user.migration`.
    public func exchangeSub(_ sub: String, target: String, accessToken: String) async -> Result<String, AppleIDError> {
        await post("/auth/usermigrationinfo", [("sub", sub), ("target", target)], bearer: accessToken).flatMap { response in
            parseObject(response).flatMap { object in
                guard let transferSub = LenientJSON.nonEmptyString(object["transfer_sub"]) else {
                    return .failure(.malformedSuccess(response.status, "missing transfer_sub"))
                }
                return .success(transferSub)
            }
        }
    }

    /// Recipient team: `transfer_sub` → the new team-scoped `sub`, relay `email`, `is_private_email`.
    public func exchangeTransferSub(_ transferSub: String, accessToken: String) async -> Result<MigratedUser, AppleIDError> {
        await post("/auth/usermigrationinfo", [("transfer_sub", transferSub)], bearer: accessToken).flatMap { response in
            parseObject(response).flatMap { object in
                MigratedUser.parse(object).mapError { .malformedSuccess(response.status, $0.reason) }
            }
        }
    }
}
