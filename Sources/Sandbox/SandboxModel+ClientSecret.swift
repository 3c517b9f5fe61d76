import Foundation
import SIWACrypto

/// Why a client secret was refused. Apple answers `invalid_client` for all of these (TN3107);
/// the sandbox additionally names the reason in the `X-Sandbox-Reason` response header.
enum ClientSecretFailure: String, Error {
    case malformed = "malformed_jws"
    case unsupportedAlgorithm = "alg_not_es256"
    case missingKeyID = "missing_kid"
    case unknownTeam = "unknown_team"
    case unknownKey = "unknown_kid"
    case badSignature = "bad_signature"
    case wrongAudience = "wrong_aud"
    case subjectMismatch = "sub_not_client_id"
    case unregisteredClient = "client_not_registered"
    case expired = "expired"
    case expiresTooFar = "exp_too_far"
    case issuedInFuture = "iat_in_future"
}

extension SandboxModel {
    /// Apple's limit on `exp - now` for a client secret, seconds (about six months).
    static let maxSecretLifetime: Double = 15_777_000
    /// Allowed clock skew for `iat` in the future, seconds.
    static let iatLeeway: Double = 60
    static let appleAudience = "https://appleid.apple.com"

    private struct Header: Decodable { var alg: String?; var kid: String? }
    private struct Claims: Decodable { var iss: String?; var sub: String?; var aud: String?; var exp: Double?; var iat: Double? }

    /// Verifies a `client_secret` the way Apple does (apple-api.md §5) for the form's `client_id`.
    ///
    /// Checks: three base64url segments; header `alg` ES256 with a `kid` registered for the team in
    /// `iss`; raw R‖S signature valid for that key; `aud` is `https://appleid.apple.com`; `sub` equals
    /// `clientID` (case-sensitive) and is registered for the team; `now < exp <= now + 15_777_000`;
    /// `iat <= now + 60`. Verified secrets are cached by their exact text until `exp`.
    /// - Parameter now: seconds since 1970.
    func authenticate(clientID: String, secret: String, now: Double,
                      tally: inout RequestTally) -> Result<VerifiedSecret, ClientSecretFailure> {
        if let cached = verifiedSecret(secret) {
            guard cached.clientID == clientID else { return .failure(.subjectMismatch) }
            guard cached.exp > now else { return .failure(.expired) }
            tally.secretVerified = true
            return .success(cached)
        }
        tally.secretChecked = true
        let result = verifyUncached(clientID: clientID, secret: secret, now: now)
        if case .success(let verified) = result {
            tally.secretVerified = true
            registry.withLock { reg in
                if reg.secretCache.count >= Self.secretCacheLimit { reg.secretCache.removeAll(keepingCapacity: true) }
                reg.secretCache[secret] = verified
            }
            lastSecret.withLock { $0 = (secret, verified) }
        }
        return result
    }

    /// The cached verification of exactly this secret text (signature, team, key, audience and
    /// lifetime bounds were checked once; the caller still compares `clientID` and `exp` with the
    /// request and now), or nil when it was never verified. A worker sends the same secret on
    /// every request for hours, so the last one verified is compared first, by text, without the
    /// registry's lock or hashing the whole JWS; a secret differing in any byte (another signature,
    /// another claim) is looked up, and verified, as the different text it is.
    func verifiedSecret(_ secret: String) -> VerifiedSecret? {
        if let last = lastSecret.withLock({ $0 }), last.secret == secret { return last.verified }
        guard let cached = registry.withLock({ $0.secretCache[secret] }) else { return nil }
        lastSecret.withLock { $0 = (secret, cached) }
        return cached
    }

    private func verifyUncached(clientID: String, secret: String,
                                now: Double) -> Result<VerifiedSecret, ClientSecretFailure> {
        guard let jws = try? JWS.split(secret),
              let header = try? JSONDecoder().decode(Header.self, from: Data(jws.header)),
              let claims = try? JSONDecoder().decode(Claims.self, from: Data(jws.payload))
        else { return .failure(.malformed) }
        guard header.alg == "ES256" else { return .failure(.unsupportedAlgorithm) }
        guard let kid = header.kid, !kid.isEmpty else { return .failure(.missingKeyID) }
        guard let iss = claims.iss, let sub = claims.sub, let exp = claims.exp, let iat = claims.iat else {
            return .failure(.malformed)
        }
        let lookup: (key: (any ES256Verifying)?, teamKnown: Bool, clientKnown: Bool) = registry.withLock { reg in
            guard let team = reg.teams[iss] else { return (nil, false, false) }
            return (team.keys[kid], true, team.clientIDs.contains(sub))
        }
        guard lookup.teamKnown else { return .failure(.unknownTeam) }
        guard let key = lookup.key else { return .failure(.unknownKey) }
        guard key.verifyES256(signature: jws.signature, message: jws.signingInput) else { return .failure(.badSignature) }
        guard claims.aud == Self.appleAudience else { return .failure(.wrongAudience) }
        guard sub == clientID else { return .failure(.subjectMismatch) }
        guard lookup.clientKnown else { return .failure(.unregisteredClient) }
        guard exp > now else { return .failure(.expired) }
        guard exp - now <= Self.maxSecretLifetime else { return .failure(.expiresTooFar) }
        guard iat <= now + Self.iatLeeway else { return .failure(.issuedInFuture) }
        return .success(VerifiedSecret(teamID: iss, clientID: sub, exp: exp))
    }
}
