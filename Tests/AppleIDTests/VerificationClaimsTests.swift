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
    ])
    func booleanClaimsAcceptBoolsAndStrings(_ value: any Sendable, _ expected: Bool) async throws {
        let claims = try await verify(["email_verified": value, "is_private_email": value, "nonce_supported": value])
        #expect(claims.emailVerified == expected)
        #expect(claims.isPrivateEmail == expected)
        #expect(claims.nonceSupported == expected)
    }

    @Test func absentBooleansAreNil() async throws {
        let claims = try await verify([:])
        #expect(claims.emailVerified == nil && claims.isPrivateEmail == nil && claims.nonceSupported == nil)
        #expect(claims.transferSub == nil && claims.realUserStatus == nil && claims.events == nil)
    }

    @Test(arguments: ["email_verified", "is_private_email", "nonce_supported"])
    func otherBooleanShapesAreMalformedNamingTheClaim(_ name: String) async throws {
        for value: any Sendable in [1, "yes", ["true"]] {
            let error = try await rejection([name: value])
            #expect(error?.reason == .malformed)
            #expect(error?.detail.hasPrefix("claim \(name): expected a boolean or \"true\"/\"false\"") == true)
        }
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
