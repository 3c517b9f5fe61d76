import AppleID
import Clocks
import Foundation
import SIWACrypto

extension SignInHandler {
    /// What verifying a submitted identity token decided.
    enum TokenCheck: Sendable {
        case verified(VerifiedClaims)
        /// Final: `reason` is the check's code (`nonce_mismatch`, `wrong_audience`, ...).
        case rejected(reason: String, detail: String)
        /// The JWKS could not be fetched, or was loaded before the sign-in arrived and lacks its
        /// `kid`: try again after the cache's refetch interval (while the code can be valid).
        case retry(String)
    }

    /// Verifies `token` for `row` (`SignInHandler` step 2). The nonce: with a raw nonce the
    /// token's `nonce` must be its SHA-256 hex or the nonce itself (`JWTVerifier.nonceMatches`);
    /// with a SHA-256 hex it must be that hex (any case); with neither the token must carry none.
    /// An unknown `kid` is final once the JWKS was loaded after the sign-in was submitted (the one
    /// refetch happened with the key already in use), or once the code's window has passed.
    func verify(_ token: String, _ row: SignInRow) async -> TokenCheck {
        let verifier: JWTVerifier
        do {
            verifier = try JWTVerifier(keys: keys, clientIDs: [row.clientID], leeway: leeway, clock: clock)
        } catch {
            return .rejected(reason: "wrong_audience", detail: error.description)
        }
        let claims: VerifiedClaims
        do {
            claims = try await verifier.verify(token, expectedNonce: row.nonce)
        } catch {
            if error.reason == .unknownKID, clock.now < row.submittedAt.addingTimeInterval(Self.codeLifetime.seconds) {
                if let failure = await keys.lastFetchError { return .retry("JWKS fetch failed: \(failure)") }
                let loaded = await keys.lastLoadedAt
                if loaded.map({ $0 < row.submittedAt }) ?? true {
                    return .retry("kid not in the JWKS loaded before the sign-in arrived; refetching: \(error.detail)")
                }
            }
            return .rejected(reason: Self.reasonCode(error.reason), detail: error.detail)
        }
        if let hash = row.nonceSHA256 {
            guard let nonce = claims.nonce, nonce.lowercased() == hash.lowercased() else {
                return .rejected(reason: "nonce_mismatch", detail: claims.nonce == nil ? "a nonce was expected and the token has none"
                                 : "nonce is not the submitted SHA-256 hex")
            }
        } else if row.nonce == nil, claims.nonce != nil {
            return .rejected(reason: "nonce_mismatch", detail: "the token carries a nonce and none was submitted")
        }
        return .verified(claims)
    }

    /// The `sub` of the `id_token` Apple returned with the tokens, when its `iss` is Apple and its
    /// `aud` the row's client. It is read, not signature-checked: it came from Apple's token
    /// endpoint in this worker's own TLS request, which OpenID Connect Core §3.1.3.7 accepts in
    /// place of the signature (Apple may sign it with a key its JWKS does not serve yet).
    static func returnedSub(_ idToken: String, clientID: String) -> String? {
        let segments = idToken.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, let bytes = Base64URL.decode(String(segments[1])),
              let claims = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              claims["iss"] as? String == JWTVerifier.issuer else { return nil }
        let audience = (claims["aud"] as? String).map { [$0] } ?? (claims["aud"] as? [String] ?? [])
        guard audience.contains(clientID) else { return nil }
        return claims["sub"] as? String
    }

    /// `siwa.sign_ins.reason` for a verification failure: the reason in snake_case.
    static func reasonCode(_ reason: JWTVerificationError.Reason) -> String {
        switch reason {
        case .malformed: "malformed"
        case .algNotAllowed: "alg_not_allowed"
        case .unknownKID: "unknown_kid"
        case .badSignature: "bad_signature"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .wrongIssuer: "wrong_issuer"
        case .wrongAudience: "wrong_audience"
        case .nonceMismatch: "nonce_mismatch"
        }
    }
}
