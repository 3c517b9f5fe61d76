extension SandboxModel {
    /// The token's `sub` if it is a registered, unrevoked refresh token issued to this team and client;
    /// otherwise `nil` (Apple: `invalid_grant`).
    func validateRefresh(token: String, teamID: String, clientID: String) -> String? {
        registry.withLock { reg in
            guard let record = reg.refreshTokens[token], !record.revoked,
                  record.teamID == teamID, record.clientID == clientID else { return nil }
            return record.sub
        }
    }

    /// Marks a refresh token revoked if it belongs to this team and client, or a bearer token if it is one.
    /// Unknown tokens are ignored (Apple still answers 200).
    func revoke(token: String, teamID: String, clientID: String) {
        registry.withLock { reg in
            if var record = reg.refreshTokens[token], record.teamID == teamID, record.clientID == clientID {
                record.revoked = true
                record.revokeRequests += 1
                reg.refreshTokens[token] = record
            } else if let bearer = reg.bearerTokens[token], bearer.teamID == teamID, bearer.clientID == clientID {
                reg.bearerTokens[token] = nil
            } else {
                reg.revokesOfUnknownTokens += 1
            }
        }
    }

    /// Mints a `client_credentials` access token bound to team, client and scope.
    /// - Parameter expiresAt: seconds since 1970.
    func mintBearer(teamID: String, clientID: String, scope: String, expiresAt: Double) -> String {
        let token = TokenMint.accessToken()
        noteIssuedAccessToken(token)
        registry.withLock { reg in
            reg.bearerTokens[token] = BearerRecord(teamID: teamID, clientID: clientID, scope: scope, expiresAt: expiresAt)
        }
        return token
    }

    /// The team and client a bearer token was minted for, if it exists and has not expired at `now`.
    func bearer(_ token: String, now: Double) -> BearerRecord? {
        registry.withLock { reg in
            guard let record = reg.bearerTokens[token] else { return nil }
            guard record.expiresAt > now else {
                reg.bearerTokens[token] = nil
                return nil
            }
            return record
        }
    }
}

extension SandboxModel {
    /// Remembers an access token handed out by `/auth/token` (bounded; oldest forgotten first).
    func noteIssuedAccessToken(_ token: String) {
        recentAccessTokens.withLock { tokens in
            if tokens.count >= Self.issuedAccessTokenLimit { tokens.removeFirst(tokens.count / 2) }
            tokens.append(token)
        }
    }

    /// Access tokens issued recently (bounded), for secret scans in tests.
    public func issuedAccessTokens() -> [String] {
        recentAccessTokens.withLock { $0 }
    }
}
