import Foundation
import Synchronization
@testable import AppleID
import TestSupport
import SIWACrypto

/// RSA keys and token minting for the verification tests. Keys are generated once per test
/// process (RSA key generation is slow) and shared.
enum VerificationFixtures {
    static let now = 1_700_000_000
    static var nowDate: Date { Date(timeIntervalSince1970: TimeInterval(now)) }
    static let clientIDs = ["com.example.app", "com.example.web"]
    static let kidA = "KEYAAA1"
    static let kidB = "KEYBBB2"

    private static let generated: Result<[RSAPrivateKey], CryptoError> = Result { () throws(CryptoError) in
        try (0..<3).map { _ throws(CryptoError) in try RSAPrivateKey.generate() }
    }

    /// Three distinct 2048-bit keys: [0] is kid A, [1] is kid B, [2] is never published.
    static func keys() throws -> [RSAPrivateKey] { try generated.get() }

    /// A JWKS document publishing `entries` as `kty: RSA, use: sig, alg: RS256`.
    static func jwks(_ entries: [(kid: String, key: RSAPrivateKey)]) -> [UInt8] {
        let keys = entries.map { entry in
            #"{"kty":"RSA","kid":"\#(entry.kid)","use":"sig","alg":"RS256","n":"\#(Base64URL.encode(entry.key.publicKey.n))","e":"\#(Base64URL.encode(entry.key.publicKey.e))"}"#
        }
        return Array(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
    }

    /// Standard id_token claims valid at `now` for the first client id.
    static func idClaims() -> [String: any Sendable] {
        [
            "iss": "https://appleid.apple.com",
            "aud": clientIDs[0],
            "sub": "000723.25da8be332964991898630947202fef0.0402",
            "iat": now - 10,
            "exp": now + 590,
            "email": "abc@privaterelay.appleid.com",
        ]
    }

    /// `claims` with `changes` applied; a value of `NSNull()` removes the claim.
    static func claims(_ changes: [String: any Sendable]) -> [String: any Sendable] {
        var out = idClaims()
        for (name, value) in changes {
            if value is NSNull { out[name] = nil } else { out[name] = value }
        }
        return out
    }

    /// An RS256 token signed by `key` with header `{"alg":"RS256","kid":kid}` plus `extraHeader`.
    static func rs256(_ claims: [String: any Sendable], kid: String = kidA, key: RSAPrivateKey, extraHeader: [String: any Sendable] = [:]) throws -> String {
        var header: [String: any Sendable] = ["alg": "RS256", "kid": kid, "typ": "JWT"]
        header.merge(extraHeader) { _, new in new }
        return try JWS.compact(header: header, payload: claims) { input throws(CryptoError) in
            try key.signRS256(input)
        }
    }

    /// A token from raw header and payload JSON text and an arbitrary signature function.
    static func raw(header: String, payload: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }

    /// A verifier over a cache of `provider`, clock fixed at `now`.
    static func verifier(_ provider: any JWKSProvider, clock: ManualClock = ManualClock(start: nowDate)) throws -> JWTVerifier {
        try JWTVerifier(keys: JWKSCache(provider: provider, clock: clock), clientIDs: clientIDs, clock: clock)
    }

    /// A provider publishing keys A and B.
    static func standardProvider() throws -> ScriptedJWKSProvider {
        let keys = try keys()
        return ScriptedJWKSProvider(jwks([(kidA, keys[0]), (kidB, keys[1])]))
    }
}

/// HMAC-SHA256 (RFC 2104) written from `Digest.sha256`, to forge HS256 tokens.
func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
    var block = key.count > 64 ? Digest.sha256(key) : key
    block += [UInt8](repeating: 0, count: 64 - block.count)
    let inner = Digest.sha256(block.map { $0 ^ 0x36 } + message)
    return Digest.sha256(block.map { $0 ^ 0x5C } + inner)
}

/// A JWKS provider whose document the test swaps; `nil` makes fetches fail (`fetch: scripted
/// outage`). Counts fetches.
final class ScriptedJWKSProvider: JWKSProvider {
    private let state: Mutex<(document: [UInt8]?, fetches: Int)>

    init(_ document: [UInt8]?) { state = Mutex((document, 0)) }

    func serve(_ document: [UInt8]?) { state.withLock { $0.document = document } }

    var fetches: Int { state.withLock { $0.fetches } }

    func fetch() async throws(JWKSError) -> [UInt8] {
        let document = state.withLock { state -> [UInt8]? in
            state.fetches += 1
            return state.document
        }
        guard let document else { throw JWKSError(field: "fetch", message: "scripted outage") }
        return document
    }
}

extension JWTVerifier {
    /// The rejection `verify` throws, or nil if it accepted the token.
    func rejection(_ token: String, at now: Date? = nil, nonce: String? = nil) async -> JWTVerificationError? {
        do {
            _ = try await verify(token, at: now, expectedNonce: nonce)
            return nil
        } catch {
            return error
        }
    }
}
