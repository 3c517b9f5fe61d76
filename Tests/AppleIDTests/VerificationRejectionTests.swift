import Foundation
import Testing
@testable import AppleID
import SIWACore
import TestSupport
import SIWACrypto

/// Every rejection reason of `JWTVerifier`, each with its precise reason (issue 4 acceptance).
@Suite struct VerificationRejectionTests {
    typealias F = VerificationFixtures

    private func expectRejected(_ verifier: JWTVerifier, _ token: String, _ reason: JWTVerificationError.Reason, detail: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async {
        let error = await verifier.rejection(token)
        #expect(error?.reason == reason, "\(error.map(String.init(describing:)) ?? "accepted")", sourceLocation: sourceLocation)
        if let detail {
            #expect(error?.detail.contains(detail) == true, "\(error?.detail ?? "")", sourceLocation: sourceLocation)
        }
        if let error, token.count > 20 {
            #expect(!error.detail.contains(token) && !error.description.contains(token), sourceLocation: sourceLocation)
            for segment in token.split(separator: ".") where segment.count > 12 {
                #expect(!error.detail.contains(segment), "detail quotes part of the token", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func acceptsAValidToken() async throws {
        let keys = try F.keys()
        let verifier = try F.verifier(try F.standardProvider())
        let claims = try await verifier.verify(try F.rs256(F.idClaims(), key: keys[0]))
        #expect(claims.sub == "000723.25da8be332964991898630947202fef0.0402")
        #expect(claims.aud == ["com.example.app"])
        let viaB = try await verifier.verify(try F.rs256(F.idClaims(), kid: F.kidB, key: keys[1]))
        #expect(viaB.exp == F.now + 590)
    }

    @Test func algNoneIsNotAllowed() async throws {
        let verifier = try F.verifier(try F.standardProvider())
        let payload = Base64URL.encode(Array(#"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":1700000590}"#.utf8))
        for header in [#"{"alg":"none","kid":"KEYAAA1"}"#, #"{"alg":"None"}"#, #"{"alg":"NONE","kid":"KEYAAA1","typ":"JWT"}"#] {
            let unsigned = Base64URL.encode(Array(header.utf8)) + "." + payload + "."
            await expectRejected(verifier, unsigned, .algNotAllowed, detail: "is not allowed; only RS256 is accepted")
            await expectRejected(verifier, unsigned + "c2ln", .algNotAllowed)
        }
    }

    @Test func hs256SignedWithTheRSAPublicKeyIsNotAllowed() async throws {
        let key = try F.keys()[0]
        let provider = try F.standardProvider()
        let verifier = try F.verifier(provider)
        let payload = #"{"aud":"com.example.app","exp":1700000590,"iat":1699999990,"iss":"https://appleid.apple.com","sub":"attacker"}"#
        let pem = key.publicKey.spkiPEM
        let jwk = String(decoding: F.jwks([(F.kidA, key)]), as: UTF8.self)
        for secret in [pem, pem.trimmingCharacters(in: .whitespacesAndNewlines), jwk] {
            let forged = F.raw(header: #"{"alg":"HS256","kid":"KEYAAA1","typ":"JWT"}"#, payload: payload) {
                hmacSHA256(key: Array(secret.utf8), message: $0)
            }
            await expectRejected(verifier, forged, .algNotAllowed, detail: "alg \"HS256\" is not allowed")
        }
        #expect(provider.fetches == 0, "rejected before any key is fetched")
    }

    @Test func hmacHelperMatchesRFC4231() {
        let mac = hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Base64URL.encode(mac) == "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM")
    }

    @Test(arguments: [#""ES256""#, #""RS512""#, #""PS256""#, #""rs256""#, #""RS256 ""#, "256", "null", #"["RS256"]"#])
    func otherAlgorithmsAreNotAllowed(_ alg: String) async throws {
        let verifier = try F.verifier(try F.standardProvider())
        let token = try F.raw(header: #"{"alg":\#(alg),"kid":"KEYAAA1"}"#, payload: #"{"exp":1700000590}"#) {
            try F.keys()[0].signRS256($0)
        }
        await expectRejected(verifier, token, .algNotAllowed)
    }

    @Test func missingAlgIsNotAllowed() async throws {
        let verifier = try F.verifier(try F.standardProvider())
        let token = try F.raw(header: #"{"kid":"KEYAAA1"}"#, payload: #"{"exp":1700000590}"#) { try F.keys()[0].signRS256($0) }
        await expectRejected(verifier, token, .algNotAllowed, detail: "alg is missing")
    }

    @Test func es256TokenSignedWithAnECKeyIsNotAllowed() async throws {
        let verifier = try F.verifier(try F.standardProvider())
        let ec = try P256PrivateKey.generate()
        let token = try JWS.es256(headerJSON: Array(#"{"alg":"ES256","kid":"KEYAAA1"}"#.utf8), payloadJSON: Array(#"{"exp":1700000590}"#.utf8), key: ec)
        await expectRejected(verifier, token, .algNotAllowed, detail: "alg \"ES256\"")
    }

    @Test func rs256SignedByAKeyNotInTheJWKSIsABadSignature() async throws {
        let keys = try F.keys()
        let verifier = try F.verifier(try F.standardProvider())
        let forged = try F.rs256(F.idClaims(), kid: F.kidA, key: keys[2])
        await expectRejected(verifier, forged, .badSignature, detail: "kid \"KEYAAA1\"")
        let crossed = try F.rs256(F.idClaims(), kid: F.kidB, key: keys[0])
        await expectRejected(verifier, crossed, .badSignature)
    }

    @Test func tamperedPayloadIsABadSignature() async throws {
        let token = try F.rs256(F.idClaims(), key: try F.keys()[0])
        let parts = token.split(separator: ".").map(String.init)
        let evil = Base64URL.encode(Array(#"{"aud":"com.example.app","exp":1700000590,"iss":"https://appleid.apple.com","sub":"someone-else"}"#.utf8))
        await expectRejected(try F.verifier(try F.standardProvider()), parts[0] + "." + evil + "." + parts[2], .badSignature)
    }

    @Test func unknownKidRefetchesExactlyOnceThenRejects() async throws {
        let keys = try F.keys()
        let provider = try F.standardProvider()
        let clock = ManualClock(start: F.nowDate)
        let verifier = try F.verifier(provider, clock: clock)
        _ = try await verifier.verify(try F.rs256(F.idClaims(), key: keys[0]))
        #expect(provider.fetches == 1)
        clock.advance(by: .seconds(120))
        let stranger = try F.rs256(F.idClaims(), kid: "ZZZZZZ9", key: keys[2])
        await expectRejected(verifier, stranger, .unknownKID, detail: "kid \"ZZZZZZ9\" not in the JWKS")
        #expect(provider.fetches == 2, "exactly one refetch")
        let another = try F.rs256(F.idClaims(), kid: "YYYYYY8", key: keys[2])
        await expectRejected(verifier, another, .unknownKID, detail: "refetch skipped")
        #expect(provider.fetches == 2, "no refetch inside the interval")
    }

    @Test func rotatedKeyVerifiesAfterExactlyOneRefetch() async throws {
        let keys = try F.keys()
        let provider = ScriptedJWKSProvider(F.jwks([(F.kidA, keys[0])]))
        let clock = ManualClock(start: F.nowDate)
        let verifier = try F.verifier(provider, clock: clock)
        _ = try await verifier.verify(try F.rs256(F.idClaims(), key: keys[0]))
        clock.advance(by: .seconds(600))
        provider.serve(F.jwks([(F.kidA, keys[0]), ("ROTATED", keys[2])]))
        let claims = try await verifier.verify(try F.rs256(F.idClaims(), kid: "ROTATED", key: keys[2]), at: F.nowDate)
        #expect(claims.sub != nil)
        #expect(provider.fetches == 2)
        _ = try await verifier.verify(try F.rs256(F.idClaims(), kid: "ROTATED", key: keys[2]), at: F.nowDate)
        _ = try await verifier.verify(try F.rs256(F.idClaims(), key: keys[0]), at: F.nowDate)
        #expect(provider.fetches == 2)
    }

    @Test func jwksOutageKeepsVerifyingWithTheLastGoodSet() async throws {
        let keys = try F.keys()
        let provider = try F.standardProvider()
        let clock = ManualClock(start: F.nowDate)
        let verifier = try F.verifier(provider, clock: clock)
        _ = try await verifier.verify(try F.rs256(F.idClaims(), key: keys[0]), at: F.nowDate)
        provider.serve(nil)
        clock.advance(by: .seconds(600))
        await expectRejected(verifier, try F.rs256(F.idClaims(), kid: "NEWKID", key: keys[2]), .unknownKID, detail: "fetch failed")
        _ = try await verifier.verify(try F.rs256(F.idClaims(), kid: F.kidB, key: keys[1]), at: F.nowDate)
        #expect(provider.fetches == 2)
    }

    @Test func timeChecksUseTheLeeway() async throws {
        let key = try F.keys()[0]
        let verifier = try F.verifier(try F.standardProvider())
        await expectRejected(verifier, try F.rs256(F.claims(["exp": F.now - 60]), key: key), .expired, detail: "exp 1699999940 is 60 s before")
        await expectRejected(verifier, try F.rs256(F.claims(["exp": F.now - 86_400]), key: key), .expired)
        _ = try await verifier.verify(try F.rs256(F.claims(["exp": F.now - 59]), key: key))
        await expectRejected(verifier, try F.rs256(F.claims(["iat": F.now + 61]), key: key), .notYetValid, detail: "iat 1700000061")
        _ = try await verifier.verify(try F.rs256(F.claims(["iat": F.now + 60]), key: key))
        await expectRejected(verifier, try F.rs256(F.claims(["nbf": F.now + 3600]), key: key), .notYetValid, detail: "nbf")
    }

    @Test func theInjectedClockIsTheDefaultVerificationTime() async throws {
        let clock = ManualClock(start: F.nowDate)
        let verifier = try F.verifier(try F.standardProvider(), clock: clock)
        let token = try F.rs256(F.idClaims(), key: try F.keys()[0])   // exp = now + 590
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(590 + 59))
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(1))
        #expect(await verifier.rejection(token)?.reason == .expired)
        #expect(await verifier.rejection(token, at: F.nowDate) == nil, "a given time still wins")
    }

    @Test func verificationTimeCanBeGiven() async throws {
        let key = try F.keys()[0]
        let verifier = try F.verifier(try F.standardProvider())
        let token = try F.rs256(F.idClaims(), key: key)
        let later = Date(timeIntervalSince1970: TimeInterval(F.now + 3600))
        #expect(await verifier.rejection(token, at: later)?.reason == .expired)
        let earlier = Date(timeIntervalSince1970: TimeInterval(F.now - 3600))
        #expect(await verifier.rejection(token, at: earlier)?.reason == .notYetValid)
    }

    @Test func issuerMustBeApple() async throws {
        let key = try F.keys()[0]
        let verifier = try F.verifier(try F.standardProvider())
        for iss in ["https://appleid.apple.com/", "http://appleid.apple.com", "https://evil.example", ""] {
            await expectRejected(verifier, try F.rs256(F.claims(["iss": iss]), key: key), .wrongIssuer, detail: "expected \"https://appleid.apple.com\"")
        }
        await expectRejected(verifier, try F.rs256(F.claims(["iss": NSNull()]), key: key), .wrongIssuer, detail: "iss is missing")
    }

    @Test func audienceMustBeAConfiguredClientID() async throws {
        let key = try F.keys()[0]
        let verifier = try F.verifier(try F.standardProvider())
        await expectRejected(verifier, try F.rs256(F.claims(["aud": "com.other.app"]), key: key), .wrongAudience, detail: "aud is \"com.other.app\"; expected one of com.example.app, com.example.web")
        await expectRejected(verifier, try F.rs256(F.claims(["aud": NSNull()]), key: key), .wrongAudience, detail: "aud is missing")
        await expectRejected(verifier, try F.rs256(F.claims(["aud": ["a", "b"]]), key: key), .wrongAudience)
        await expectRejected(verifier, try F.rs256(F.claims(["aud": [String]()]), key: key), .wrongAudience)
        let web = try await verifier.verify(try F.rs256(F.claims(["aud": "com.example.web"]), key: key))
        #expect(web.aud == ["com.example.web"])
        let array = try await verifier.verify(try F.rs256(F.claims(["aud": ["com.other", "com.example.web"]]), key: key))
        #expect(array.aud == ["com.other", "com.example.web"])
        await expectRejected(verifier, try F.rs256(F.claims(["aud": 5]), key: key), .malformed, detail: "claim aud")
    }

    @Test func verifierNeedsAClientID() throws {
        #expect(throws: ConfigurationError("invalid clientIDs: at least one client id is required to check aud")) {
            _ = try JWTVerifier(keys: JWKSCache(provider: StaticJWKSProvider(document: [])), clientIDs: ["", ""])
        }
    }
}
