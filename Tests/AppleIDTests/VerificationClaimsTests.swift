import Foundation
import Testing
@testable import AppleID
import SIWACrypto

/// Claim normalisation for id_tokens (apple-api.md §7.2) and the nonce policy.
@Suite struct VerificationClaimsTests {
    typealias F = VerificationFixtures

    private func verify(_ changes: [String: any Sendable], nonce: String? = nil) async throws -> VerifiedClaims {
        let verifier = try F.verifier(try F.standardProvider())
        return try await verifier.verify(try F.rs256(F.claims(changes), key: try F.keys()[0]), expectedNonce: nonce)
    }

    private func rejection(_ changes: [String: any Sendable], nonce: String? = nil) async throws -> JWTVerificationError? {
        let verifier = try F.verifier(try F.standardProvider())
        return await verifier.rejection(try F.rs256(F.claims(changes), key: try F.keys()[0]), nonce: nonce)
    }

    @Test func allDocumentedClaimsAreRead() async throws {
        let claims = try await verify([
            "email_verified": true, "is_private_email": true, "transfer_sub": "000111.abc.0001",
            "nonce": "n-1", "nonce_supported": true, "real_user_status": 2, "jti": "j-1",
            "auth_time": F.now - 20, "c_hash": "xyz",
        ])
        #expect(claims == VerifiedClaims(
            iss: "https://appleid.apple.com", aud: ["com.example.app"],
            sub: "000723.25da8be332964991898630947202fef0.0402", iat: F.now - 10, exp: F.now + 590,
            email: "abc@privaterelay.appleid.com", emailVerified: true, isPrivateEmail: true,
            transferSub: "000111.abc.0001", nonce: "n-1", nonceSupported: true, realUserStatus: 2,
            jti: "j-1", events: nil
        ))
    }

    @Test(arguments: [
        (true as any Sendable, true), (false as any Sendable, false), ("true" as any Sendable, true),
        ("false" as any Sendable, false), ("TRUE" as any Sendable, true), ("False" as any Sendable, false),
        (1 as any Sendable, true), (0 as any Sendable, false), ("1" as any Sendable, true), ("0" as any Sendable, false),
        (" true " as any Sendable, true),
    ])
    func booleanClaimsAreReadLeniently(_ value: any Sendable, _ expected: Bool) async throws {
        let claims = try await verify(["email_verified": value, "is_private_email": value, "nonce_supported": value])
        #expect(claims.emailVerified == expected)
        #expect(claims.isPrivateEmail == expected)
        #expect(claims.nonceSupported == expected)
        #expect(claims.warnings.isEmpty)
    }

    @Test func absentBooleansAreNil() async throws {
        let claims = try await verify([:])
        #expect(claims.emailVerified == nil && claims.isPrivateEmail == nil && claims.nonceSupported == nil)
        #expect(claims.transferSub == nil && claims.realUserStatus == nil && claims.events == nil)
    }

    /// Issue 8 §10: an odd flag never rejects a correctly signed token; it reads as false and says so.
    @Test(arguments: ["email_verified", "is_private_email", "nonce_supported"])
    func otherBooleanShapesReadAsFalseWithAWarning(_ name: String) async throws {
        let cases: [(any Sendable, String)] = [
            ("yes", "the string \"yes\""), (2, "the number 2"), (NSNull(), "null"), (["true"], "an array"),
            (["a": 1], "an object"), (1.5, "a number"),
        ]
        let key = try F.keys()[0]
        for (value, shown) in cases {
            var object = F.idClaims().mapValues { $0 as Any }
            object[name] = value
            let payload = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            let token = try F.raw(header: #"{"alg":"RS256","kid":"KEYAAA1"}"#, payload: payload) { try key.signRS256($0) }
            let claims = try await F.verifier(try F.standardProvider()).verify(token)
            let read = [claims.emailVerified, claims.isPrivateEmail, claims.nonceSupported]
            #expect(read.compactMap { $0 } == [false], "\(name) = \(shown)")
            #expect(claims.warnings == ["claim \(name): \(shown) is not a boolean; read as false"])
        }
        let json = String(decoding: try JSONEncoder().encode(try await verify([name: "yes"])), as: UTF8.self)
        #expect(json.contains(#""warnings":["claim \#(name): the string \"yes\" is not a boolean; read as false"]"#), "\(json)")
        let clean = String(decoding: try JSONEncoder().encode(try await verify([:])), as: UTF8.self)
        #expect(!clean.contains("warnings"))
    }

    /// Issue 8 §10: `sub` is required in an id_token; `exp`/`iat` in milliseconds are refused.
    @Test func subIsRequiredAndTimesMustBeSeconds() async throws {
        #expect(try await rejection(["sub": NSNull()]) == JWTVerificationError(.malformed, "claim sub: missing; an id_token must name its user"))
        #expect(try await rejection(["sub": ""]) == JWTVerificationError(.malformed, "claim sub: empty; an id_token must name its user"))
        let msExp = Int64(F.now + 590) * 1000
        #expect(try await rejection(["exp": msExp]) == JWTVerificationError(
            .malformed, "claim exp: \(msExp) is above 10^11, so milliseconds; expected seconds since 1970"))
        #expect(try await rejection(["iat": "\(Int64(F.now) * 1000)"])?.detail.hasPrefix("claim iat: \(Int64(F.now) * 1000) is above 10^11") == true)
        #expect(try await rejection(["nbf": Int64(F.now) * 1000])?.detail.hasPrefix("claim nbf:") == true)
        let edge = try await rejection(["exp": 100_000_000_000])
        #expect(edge == nil, "10^11 itself is seconds (the year 5138)")
        #expect(try await rejection(["exp": 100_000_000_001])?.detail.hasPrefix("claim exp: 100000000001 is above 10^11") == true)
    }

    @Test func timeClaimsAcceptNumericStrings() async throws {
        let claims = try await verify(["iat": "\(F.now - 10)", "exp": "\(F.now + 100)", "real_user_status": "1"])
        #expect(claims.iat == F.now - 10 && claims.exp == F.now + 100 && claims.realUserStatus == 1)
        let fractional = try await verify(["exp": Double(F.now) + 100.9])
        #expect(fractional.exp == F.now + 100)
        #expect(try await rejection(["exp": "\(F.now - 3600)"])?.reason == .expired)
    }

    @Test func stringClaimsOfTheWrongTypeAreMalformed() async throws {
        let error = try await rejection(["sub": 12345])
        #expect(error == JWTVerificationError(.malformed, "claim sub: expected a string, got a number"))
        #expect(try await rejection(["email": ["a"]])?.detail == "claim email: expected a string, got an array")
        #expect(try await rejection(["real_user_status": true])?.detail == "claim real_user_status: expected a number or numeric string, got a boolean")
    }

    @Test func nonceMatchesItsSHA256HexOrItself() async throws {
        let raw = "d2f1c4e9-raw-nonce"
        let hashed = Digest.sha256Hex(raw)
        #expect(try await verify(["nonce": hashed], nonce: raw).nonce == hashed)
        #expect(try await verify(["nonce": hashed.uppercased()], nonce: raw).nonce == hashed.uppercased())
        #expect(try await verify(["nonce": raw], nonce: raw).nonce == raw)
        #expect(try await verify(["nonce": "whatever"]).nonce == "whatever", "no check unless a nonce is expected")

        let wrong = try await rejection(["nonce": Digest.sha256Hex("other")], nonce: raw)
        #expect(wrong == JWTVerificationError(.nonceMismatch, "nonce is neither the expected nonce nor its SHA-256 hex"))
        #expect(try await rejection(["nonce": Digest.sha256Hex(hashed)], nonce: raw)?.reason == .nonceMismatch, "double hash")
        #expect(try await rejection(["nonce": String(hashed.dropLast())], nonce: raw)?.reason == .nonceMismatch)
        #expect(try await rejection([:], nonce: raw) == JWTVerificationError(.nonceMismatch, "a nonce was expected and the token has none"))
        #expect(try await rejection(["nonce": ""], nonce: "")?.reason == .nonceMismatch, "an empty expected nonce never matches")
    }

    @Test func nonceIsCheckedOnlyAfterTheOtherClaims() async throws {
        #expect(try await rejection(["aud": "x", "nonce": "n"], nonce: "m")?.reason == .wrongAudience)
    }

    @Test func encodesWithApplesClaimNamesAndOmitsAbsentOnes() async throws {
        let claims = try await verify(["email_verified": "true", "transfer_sub": "t", "real_user_status": 2])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(claims), as: UTF8.self)
        #expect(json == #"{"aud":["com.example.app"],"email":"abc@privaterelay.appleid.com","email_verified":true,"exp":1700000590,"iat":1699999990,"iss":"https://appleid.apple.com","real_user_status":2,"sub":"000723.25da8be332964991898630947202fef0.0402","transfer_sub":"t"}"#)
    }
}
