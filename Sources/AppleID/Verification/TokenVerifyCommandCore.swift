import Foundation

/// The testable core of `siwa-jobs token verify` (ops debugging; issue 4 §5). The CLI parses
/// flags and prints `output` to stdout, exiting with `exitCode`:
/// - 0: verified; `output` is the normalised claims as pretty JSON with sorted keys
///   (`VerifiedClaims` encoding);
/// - 1: rejected; `output` is `rejected: <reason>: <detail>` (reasons as in
///   `JWTVerificationError.Reason`, e.g. `rejected: expired: exp 1700000000 is ...`);
/// - 64: usage (no client id given);
/// - 65: a JWKS file is not a usable JWKS (`error: JWKS ...`: bad JSON, no RSA key, too large);
/// - 66: a JWKS file cannot be read;
/// - 69: a JWKS from anywhere else (a URL) could not be fetched or used.
/// On 65, 66 and 69 nothing was verified.
/// `output` never contains the token.
public enum TokenVerifyCommandCore {
    /// - Parameters:
    ///   - token: the compact JWT (whitespace around it is ignored).
    ///   - jwks: where the JWKS comes from (`FileJWKSProvider`, `HTTPJWKSProvider`).
    ///   - clientIDs: accepted `aud` values.
    ///   - at: verification time (default now), e.g. to check a captured token.
    ///   - expectedNonce: raw nonce to require (see `JWTVerifier.nonceMatches`).
    public static func run(
        token: String,
        jwks: any JWKSProvider,
        clientIDs: [String],
        at: Date?,
        expectedNonce: String?
    ) async -> (exitCode: Int32, output: String) {
        let cache = JWKSCache(provider: jwks)
        let verifier: JWTVerifier
        do {
            verifier = try JWTVerifier(keys: cache, clientIDs: clientIDs)
        } catch {
            return (64, "usage: \(error)")
        }
        do {
            try await cache.refresh()
        } catch {
            return (jwksExitCode(jwks), "error: \(error)")
        }
        do {
            let claims = try await verifier.verify(token, at: at ?? Date(), expectedNonce: expectedNonce)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(claims) else {
                return (70, "error: could not encode the verified claims")
            }
            return (0, String(decoding: data, as: UTF8.self))
        } catch {
            return (1, "rejected: \(error.reason.rawValue): \(error.detail)")
        }
    }

    /// A file the operator named is a data problem (65) or missing input (66); a fetched JWKS is
    /// a service problem (69).
    static func jwksExitCode(_ jwks: any JWKSProvider) -> Int32 {
        guard let file = jwks as? FileJWKSProvider else { return 69 }
        return FileManager.default.isReadableFile(atPath: file.path) ? 65 : 66
    }
}
