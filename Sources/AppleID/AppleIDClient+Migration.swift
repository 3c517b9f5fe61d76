/// App-transfer identifier exchange, `POST /auth/usermigrationinfo` with a Bearer token from
/// `clientCredentialsToken()` (apple-api.md §4; Apple TN3159).
extension AppleIDClient {
    /// Sending team: user `sub` + recipient Team ID → `transfer_sub`.
    /// - Parameters:
    ///   - target: the **recipient** team's 10-character Team ID (not your own).
    ///   - accessToken: a `client_credentials` token for scope `user.migration`.
    /// - Throws: `AppleIDError`; `invalid_request` (permanent) is a per-user refusal, `invalid_grant`
    ///   an expired token or a closed migration window.
    public func exchangeSub(_ sub: String, target: String, accessToken: String) async throws(AppleIDError) -> String {
        let response = try await post(.userMigrationInfo, [("sub", sub), ("target", target)], bearer: accessToken)
        guard let transferSub = LenientJSON.nonEmptyString(try parseObject(response)["transfer_sub"]) else {
            throw .malformedSuccess(response.status, "missing transfer_sub")
        }
        return transferSub
    }

    /// Recipient team: `transfer_sub` → the new team-scoped `sub`, relay `email`, `is_private_email`.
    /// - Throws: `AppleIDError`, as `exchangeSub`.
    public func exchangeTransferSub(_ transferSub: String, accessToken: String) async throws(AppleIDError) -> MigratedUser {
        let response = try await post(.userMigrationInfo, [("transfer_sub", transferSub)], bearer: accessToken)
        return try MigratedUser.parse(try parseObject(response), status: response.status)
    }
}
