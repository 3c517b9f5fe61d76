import Clocks
import Foundation
import SIWACore
import SIWACrypto

/// Verifies Apple identity tokens and server-to-server notification JWTs
/// (apple-api.md §6–§8; RFC 7515 compact JWS, RFC 7519 claims).
///
/// Checks, in order; the first failure is thrown as `JWTVerificationError`:
/// 1. shape (`malformed`): at most 16 KiB in total and 4 KiB of encoded header, three
///    dot-separated base64url segments, a JSON-object header with a string `kid` and no `crit`;
/// 2. `alg` must be exactly `RS256`, whatever else the header says (`algNotAllowed`):
///    `none`, `HS256` (including HMAC keyed with the RSA public key), `ES256`, ... are refused
///    before any key is touched;
/// 3. the key is chosen by `kid` from the `JWKSCache`, which may refetch once (`unknownKID`);
/// 4. the signature must be as long as the modulus (`malformed`, e.g. a truncated token) and
///    verify as RSASSA-PKCS1-v1_5/SHA-256 (`badSignature`);
/// 5. the payload must be a JSON object with well-shaped claims (`malformed`, see
///    `VerifiedClaims`: `sub` in an id_token, `exp`/`iat`/`nbf` in seconds, not above 10^11);
/// 6. `iss` == `https://appleid.apple.com` (`wrongIssuer`); some `aud` is a configured client id
///    (`wrongAudience`); `exp` + leeway > now (`expired`); `iat` and `nbf` <= now + leeway
///    (`notYetValid`);
/// 7. when a nonce is expected: see `nonceMatches(claim:expected:)` (`nonceMismatch`).
public struct JWTVerifier: Sendable {
    public static let issuer = "https://appleid.apple.com"
    /// Largest token accepted, in bytes (16 KiB).
    public static let maxTokenBytes = 16 * 1024
    /// Largest encoded (base64url) header accepted, in bytes (4 KiB).
    public static let maxHeaderBytes = 4 * 1024

    public let keys: JWKSCache
    /// Accepted `aud` values (an App ID and a Services ID are common together).
    public let clientIDs: [String]
    /// Clock skew tolerated on `exp`, `iat` and `nbf`.
    public let leeway: Duration
    /// The verification time when `verify` is not given one; also the clock callers judge retry
    /// windows by (e.g. how long an unknown `kid` has been waited for).
    public let clock: any WallClock

    /// - Parameters:
    ///   - keys: the JWKS cache to select keys from.
    ///   - clientIDs: accepted audiences; must hold at least one non-empty id.
    ///   - leeway: clock skew tolerated (default 60 s; clamped to 0 ... 600 s).
    ///   - clock: verification time when `verify` is not given one (default the system clock).
    /// - Throws: `ConfigurationError` naming `clientIDs` if none is given.
    public init(
        keys: JWKSCache,
        clientIDs: [String],
        leeway: Duration = .seconds(60),
        clock: any WallClock = SystemClock()
    ) throws(ConfigurationError) {
        let ids = clientIDs.filter { !$0.isEmpty }
        guard !ids.isEmpty else {
            throw ConfigurationError("invalid clientIDs: at least one client id is required to check aud")
        }
        self.keys = keys
        self.clientIDs = ids
        self.leeway = min(max(leeway, .zero), .seconds(600))
        self.clock = clock
    }

    /// Verifies `token` and returns its normalised claims.
    /// - Parameters:
    ///   - token: compact JWS; surrounding whitespace is ignored.
    ///   - now: verification time (default: the injected clock).
    ///   - expectedNonce: the raw nonce the app issued, if the token must carry it.
    /// - Throws: `JWTVerificationError`; its `detail` never contains the token.
    public func verify(_ token: String, at now: Date? = nil, expectedNonce: String? = nil) async throws(JWTVerificationError) -> VerifiedClaims {
        let parts = try JWTParts(token.trimmingCharacters(in: .whitespacesAndNewlines))
        let key: RSAPublicKey
        switch await keys.lookup(kid: parts.kid) {
        case .found(let found): key = found
        case .missing(let detail): throw JWTVerificationError(.unknownKID, detail)
        }
        let modulusBytes = key.n.count
        guard parts.signature.count == modulusBytes else {
            throw JWTVerificationError(.malformed, "signature is \(parts.signature.count) bytes; RS256 with this \(modulusBytes * 8)-bit key needs \(modulusBytes)")
        }
        guard key.verifyRS256(signature: parts.signature, message: parts.signingInput) else {
            throw JWTVerificationError(.badSignature, "RS256 signature does not verify with the JWKS key for kid \(JWTVerificationError.quote(parts.kid))")
        }
        guard let members = JSONValue.object(from: parts.payload) else {
            throw JWTVerificationError(.malformed, "payload is not a JSON object")
        }
        let claims = try VerifiedClaims.decode(members)
        try check(claims, members: members, now: now ?? clock.now)
        if let expectedNonce {
            guard let nonce = claims.nonce else {
                throw JWTVerificationError(.nonceMismatch, "a nonce was expected and the token has none")
            }
            guard Self.nonceMatches(claim: nonce, expected: expectedNonce) else {
                throw JWTVerificationError(.nonceMismatch, "nonce is neither the expected nonce nor its SHA-256 hex")
            }
        }
        return claims
    }

    private func check(_ claims: VerifiedClaims, members: [String: JSONValue], now: Date) throws(JWTVerificationError) {
        guard claims.iss == Self.issuer else {
            let got = claims.iss.isEmpty ? "missing" : JWTVerificationError.quote(claims.iss)
            throw JWTVerificationError(.wrongIssuer, "iss is \(got); expected \"\(Self.issuer)\"")
        }
        guard claims.aud.contains(where: clientIDs.contains) else {
            let got = claims.aud.isEmpty ? "missing" : claims.aud.prefix(5).map(JWTVerificationError.quote).joined(separator: ", ")
            throw JWTVerificationError(.wrongAudience, "aud is \(got); expected one of \(clientIDs.joined(separator: ", "))")
        }
        let seconds = now.timeIntervalSince1970
        let leeway = self.leeway.seconds
        guard seconds < Double(claims.exp) + leeway else {
            throw JWTVerificationError(.expired, "exp \(claims.exp) is \(Int(seconds) - claims.exp) s before the verification time \(Int(seconds)) (leeway \(Int(leeway)) s)")
        }
        if let iat = claims.iat, Double(iat) > seconds + leeway {
            throw JWTVerificationError(.notYetValid, "iat \(iat) is \(iat - Int(seconds)) s after the verification time \(Int(seconds)) (leeway \(Int(leeway)) s)")
        }
        let reader = ClaimReader(members: members, context: "claim")
        if let nbf = try reader.seconds("nbf"), Double(nbf) > seconds + leeway {
            throw JWTVerificationError(.notYetValid, "nbf \(nbf) is after the verification time \(Int(seconds)) (leeway \(Int(leeway)) s)")
        }
    }

    /// Nonce policy. The token's `nonce` matches when it equals the lower-case SHA-256 hex of
    /// the raw `expected` nonce (what native iOS apps put in the request, per Apple's sample
    /// code), compared case-insensitively, or when it equals `expected` exactly (web and
    /// Android flows pass the nonce through unchanged). Accepting both is safe because the raw
    /// nonce is fresh and chosen by the server: a token carries either form only if it was
    /// requested for this nonce. Comparison time does not depend on where the strings differ.
    public static func nonceMatches(claim: String, expected: String) -> Bool {
        guard !expected.isEmpty else { return false }
        let hashed = Digest.sha256Hex(expected)
        return constantTimeEqual(claim.lowercased(), hashed) || constantTimeEqual(claim, expected)
    }

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
