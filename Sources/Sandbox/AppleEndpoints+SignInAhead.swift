import Dispatch
import SIWACore
import Synchronization

extension AppleEndpoints {
    /// The claims of a refresh answer's id_token for `sub` of `clientID` issued at `now` (seconds
    /// since 1970): `iat` = `auth_time` = now, `exp` = now + `idTokenLifetime` (apple-api.md §7).
    static func idTokenClaims(clientID: String, sub: String, now: Int) -> String {
        "{\"iss\":\"https://appleid.apple.com\",\"aud\":\(JSONText.quote(clientID)),"
            + "\"exp\":\(now + idTokenLifetime),\"iat\":\(now),\"sub\":\(JSONText.quote(sub)),\"auth_time\":\(now)}"
    }

    /// Signs each user's id_token as of a sign-in at `now` (seconds since 1970) and keeps it in
    /// `idTokens`, as Apple signs one when a user signs in: a refresh answer within the reuse
    /// window (`IDTokenCache.reuseSeconds`) then hands it out instead of signing on the request
    /// path. The signatures are spread over the cores (`DispatchQueue.concurrentPerform`).
    ///
    /// Nothing is signed when refresh answers carry no id_token or reuse is off (every answer
    /// signs afresh then). Users beyond the cache's limit push the oldest out (`IDTokenCache.keep`).
    /// - Returns: how many id_tokens were signed.
    func signInAhead(_ users: [IDTokenCache.Key], now: Int) -> Int {
        guard refreshIDToken, idTokens.reuseSeconds > 0, !users.isEmpty else { return 0 }
        let kid = keySet.currentKID
        let chunks = max(1, min(users.count / 256, 64))
        let signed = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            var count = 0
            for index in stride(from: chunk, to: users.count, by: chunks) {
                let user = users[index]
                guard idTokens.reusable(user, kid: kid, now: now) == nil,
                      let token = try? keySet.signed(claimsJSON: Self.idTokenClaims(clientID: user.clientID, sub: user.sub, now: now))
                else { continue }
                idTokens.keep(token.token, kid: token.kid, iat: now, for: user)
                count += 1
            }
            signed.add(count, ordering: .relaxed)
        }
        return signed.load(ordering: .relaxed)
    }
}

