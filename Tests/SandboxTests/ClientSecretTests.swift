import Foundation
import SIWACrypto
import Testing
@testable import Sandbox

@Suite struct ClientSecretTests {
    @Test func goodSecretIsAccepted() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-good")
        let reply = try f.refresh("rt-good")
        #expect(reply.status == 200)
        #expect(f.model.stats().clientSecretsVerified == 1)
    }

    /// Our secrets back-date `iat` 60 s (and a slow clock may do more): no lower bound on `iat`.
    @Test func backDatedIatIsAccepted() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        #expect(try f.refresh("rt-1", secret: try f.secret(iat: f.now - 60, exp: f.now + 600)).status == 200)
        #expect(try f.refresh("rt-1", secret: try f.secret(iat: f.now - 3600, exp: f.now + 600)).status == 200)
    }

    /// Each broken secret must produce exactly Apple's `invalid_client` answer.
    enum Bad: String, CaseIterable {
        case derSignature, wrongKid, missingKid, wrongIss, wrongAud, subMismatch, expired, expTooFar
        case unregisteredClient, iatInFuture, algHS256, wrongKey, notAJWS

        /// The sandbox's diagnostic reason (X-Sandbox-Reason), so each case fails for its own cause.
        var reason: String {
            switch self {
            case .derSignature, .wrongKey: "bad_signature"
            case .wrongKid: "unknown_kid"
            case .missingKid: "missing_kid"
            case .wrongIss: "unknown_team"
            case .wrongAud: "wrong_aud"
            case .subMismatch: "sub_not_client_id"
            case .expired: "expired"
            case .expTooFar: "exp_too_far"
            case .unregisteredClient: "client_not_registered"
            case .iatInFuture: "iat_in_future"
            case .algHS256: "alg_not_es256"
            case .notAJWS: "malformed_jws"
            }
        }
    }

    @Test(arguments: Bad.allCases)
    func badSecretIsInvalidClient(_ bad: Bad) throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        f.registerToken("rt-2", clientID: "com.example.unregistered")
        let now = f.now
        var clientID = SandboxFixture.clientID
        let secret: String
        switch bad {
        case .derSignature: secret = try f.secret(der: true)
        case .wrongKid: secret = try f.secret(kid: "NOTAKEY000")
        case .missingKid: secret = try f.secret(kid: nil)
        case .wrongIss: secret = try f.secret(iss: "TEAMZ99999")
        case .wrongAud: secret = try f.secret(aud: "https://appleid.apple.com/")
        case .subMismatch: secret = try f.secret(sub: "com.example.APP")
        case .expired: secret = try f.secret(iat: now - 1000, exp: now - 10)
        case .expTooFar: secret = try f.secret(exp: now + 15_777_000 + 120)
        case .unregisteredClient:
            clientID = "com.example.unregistered"
            secret = try f.secret(sub: clientID)
        case .iatInFuture: secret = try f.secret(iat: now + 600, exp: now + 1200)
        case .algHS256: secret = try f.secret(alg: "HS256")
        case .wrongKey: secret = try f.secret(signingKey: P256PrivateKey.generate())
        case .notAJWS: secret = "not-a-jwt"
        }
        let reply = try f.refresh(clientID == SandboxFixture.clientID ? "rt-1" : "rt-2", clientID: clientID, secret: secret)
        #expect(reply.status == 400)
        #expect(reply.text == #"{"error":"invalid_client"}"#)
        #expect(reply.header("Content-Type") == "application/json;charset=UTF-8")
        #expect(reply.header("Cache-Control") == "no-store")
        #expect(reply.header("Pragma") == "no-cache")
        #expect(reply.header("X-Sandbox-Reason") == bad.reason)
        #expect(f.model.stats().errors["invalid_client"] == 1)
    }

    @Test func cachedSecretStillChecksClientID() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let secret = try f.secret()
        #expect(try f.refresh("rt-1", secret: secret).status == 200)
        #expect(try f.refresh("rt-1", secret: secret).status == 200)
        // Same (cached) secret presented for another client_id: sub no longer matches.
        let other = try f.refresh("rt-1", clientID: SandboxFixture.otherClientID, secret: secret)
        #expect(other.text == #"{"error":"invalid_client"}"#)
        let stats = f.model.stats()
        #expect(stats.clientSecretSignatureChecks == 1)
        #expect(stats.clientSecretsVerified == 2)
    }

    /// The verified-secret cache (and its last-secret fast path) keeps `exp`: a secret accepted
    /// from the cache is refused as expired once the sandbox's clock passes it.
    @Test func aCachedSecretIsRefusedOnceItExpires() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let secret = try f.secret(iat: f.now - 60, exp: f.now + 120)
        #expect(try f.refresh("rt-1", secret: secret).status == 200)
        #expect(try f.refresh("rt-1", secret: secret).status == 200)
        f.clock.advance(by: .seconds(121))
        let late = try f.refresh("rt-1", secret: secret)
        #expect(late.text == #"{"error":"invalid_client"}"#)
        #expect(late.header("X-Sandbox-Reason") == "expired")
        #expect(f.model.stats().clientSecretSignatureChecks == 1)
    }

    /// A secret that differs from the cached one in a single byte (its signature or its claims) is
    /// verified as the new text it is, and refused; the genuine one is still accepted from the cache.
    @Test func aTamperedCopyOfACachedSecretIsRefused() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let secret = try f.secret()
        #expect(try f.refresh("rt-1", secret: secret).status == 200)
        let parts = secret.split(separator: ".").map(String.init)
        var signature = Array(parts[2].utf8)
        signature[10] = signature[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let badSignature = parts[0] + "." + parts[1] + "." + String(decoding: signature, as: UTF8.self)
        let otherClaims = try f.secret(exp: f.now + 900).split(separator: ".")[1]
        let swappedClaims = parts[0] + "." + otherClaims + "." + parts[2]
        for tampered in [badSignature, swappedClaims] {
            let reply = try f.refresh("rt-1", secret: tampered)
            #expect(reply.text == #"{"error":"invalid_client"}"#)
            #expect(reply.header("X-Sandbox-Reason") == "bad_signature")
        }
        #expect(try f.refresh("rt-1", secret: secret).status == 200)
        let stats = f.model.stats()
        #expect(stats.clientSecretSignatureChecks == 3)
        #expect(stats.clientSecretsVerified == 2)
    }

    @Test func secondKeyForTheSameTeamWorks() throws {
        let f = try SandboxFixture()
        let second = try P256PrivateKey.generate()
        try f.model.registerTeam(teamID: SandboxFixture.teamID, keyID: "KEYB000002", publicKeyPEM: second.publicKey.spkiPEM,
                                 clientIDs: [])
        f.registerToken("rt-1")
        #expect(try f.refresh("rt-1", secret: f.secret(kid: "KEYB000002", signingKey: second)).status == 200)
        #expect(try f.refresh("rt-1", secret: f.secret(kid: "KEYB000002")).status == 400)
    }
}
