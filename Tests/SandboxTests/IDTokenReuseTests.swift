import Foundation
import SIWACrypto
import Testing
@testable import Sandbox

/// A user's signed refresh id_token is handed out again for a short time (`IDTokenCache`), only
/// while it is still valid and only to that user of that client, signed by the current key.
@Suite struct IDTokenReuseTests {
    /// The id_token of a refresh answer, its claims and its header's `kid`.
    struct IDToken {
        var text: String
        var claims: [String: Any]
        var kid: String?
    }

    func idToken(_ f: SandboxFixture, _ refreshToken: String, clientID: String = SandboxFixture.clientID) throws -> IDToken {
        let reply = try f.refresh(refreshToken, clientID: clientID)
        #expect(reply.status == 200)
        let text = try #require(f.json(reply)?["id_token"] as? String)
        let parts = try JWS.split(text)
        return IDToken(text: text, claims: try object(parts.payload), kid: try object(parts.header)["kid"] as? String)
    }

    /// Whether `token` verifies against the key the JWKS publishes under its `kid`.
    func verifies(_ f: SandboxFixture, _ token: IDToken) throws -> Bool {
        let keys = try #require(try object(f.get("/auth/keys").body)["keys"] as? [[String: Any]])
        let jwk = try #require(keys.first { $0["kid"] as? String == token.kid })
        let parts = try JWS.split(token.text)
        return try RSAPublicKey(n: b64(jwk["n"]), e: b64(jwk["e"])).verifyRS256(signature: parts.signature, message: parts.signingInput)
    }

    @Test func aUserValidatedAgainWithinTheWindowGetsTheSameTokenWhileItIsStillValid() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1", sub: "000111.alice.0001")
        let issuedAt = Int(f.now)
        let first = try idToken(f, "rt-1")
        f.clock.advance(by: .seconds(299))
        let again = try idToken(f, "rt-1")
        #expect(again.text == first.text, "reused within 300 s")
        #expect(again.claims["iat"] as? Int == issuedAt, "its honest issue time, not now")
        let exp = try #require(again.claims["exp"] as? Int)
        #expect(exp == issuedAt + 600 && exp > Int(f.now) + 300, "still valid for more than half its lifetime")
        #expect(try verifies(f, again))
        let stats = f.model.stats()
        #expect(stats.idTokensSigned == 1 && stats.idTokensReused == 1)
    }

    @Test func onceTheWindowHasPassedANewTokenIsSignedWithTheNewTime() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1", sub: "000111.alice.0001")
        let first = try idToken(f, "rt-1")
        f.clock.advance(by: .seconds(300))
        let later = try idToken(f, "rt-1")
        #expect(later.text != first.text)
        #expect(later.claims["iat"] as? Int == Int(f.now) && later.claims["exp"] as? Int == Int(f.now) + 600)
        #expect(try verifies(f, later))
        #expect(f.model.stats().idTokensSigned == 2 && f.model.stats().idTokensReused == 0)
    }

    @Test func aDifferentUserOrClientNeverGetsAnotherOnesToken() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-alice", sub: "000111.alice.0001")
        f.registerToken("rt-bob", sub: "000222.bob.0002")
        f.registerToken("rt-alice-other", clientID: SandboxFixture.otherClientID, sub: "000111.alice.0001")
        let alice = try idToken(f, "rt-alice")
        let bob = try idToken(f, "rt-bob")
        let aliceOther = try idToken(f, "rt-alice-other", clientID: SandboxFixture.otherClientID)
        #expect(bob.claims["sub"] as? String == "000222.bob.0002" && bob.text != alice.text)
        #expect(aliceOther.claims["aud"] as? String == SandboxFixture.otherClientID && aliceOther.text != alice.text)
        // Again, each in the window: each gets their own token back, never another's.
        #expect(try idToken(f, "rt-bob").text == bob.text)
        #expect(try idToken(f, "rt-alice").text == alice.text)
        #expect(try idToken(f, "rt-alice-other", clientID: SandboxFixture.otherClientID).text == aliceOther.text)
        #expect(f.model.stats().idTokensSigned == 3 && f.model.stats().idTokensReused == 3)
    }

    @Test func aKeyRotationEndsReuseAtOnce() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let before = try idToken(f, "rt-1")
        let rotated = try #require(f.json(try f.postJSON("/__sandbox/keys/rotate", "{}")))
        let newKID = try #require(rotated["kid"] as? String)
        let after = try idToken(f, "rt-1")
        #expect(before.kid != newKID && after.kid == newKID)
        #expect(try verifies(f, after))
    }

    @Test func aSandboxClockMovedBackNeverHandsOutATokenIssuedInItsFuture() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let first = try idToken(f, "rt-1")
        f.clock.advance(by: .seconds(-10))
        let back = try idToken(f, "rt-1")
        #expect(back.text != first.text && back.claims["iat"] as? Int == Int(f.now))
    }

    @Test func reuseZeroSignsEveryAnswer() throws {
        var configuration = SandboxConfiguration()
        configuration.idTokenReuseSeconds = 0
        let f = try SandboxFixture(configuration)
        f.registerToken("rt-1")
        let first = try idToken(f, "rt-1")
        let second = try idToken(f, "rt-1")
        #expect(first.claims["iat"] as? Int == second.claims["iat"] as? Int)
        #expect(f.model.stats().idTokensSigned == 2 && f.model.stats().idTokensReused == 0)
        #expect(f.server.idTokenCacheCount == 0)
    }

    @Test func theWindowIsAtMostHalfTheLifetimeAndTheCacheStaysBounded() {
        #expect(IDTokenCache(reuseSeconds: 3600, lifetime: 600).reuseSeconds == 300)
        #expect(IDTokenCache(reuseSeconds: -5, lifetime: 600).reuseSeconds == 0)
        let cache = IDTokenCache(reuseSeconds: 300, lifetime: 600, limit: 4)
        func key(_ i: Int) -> IDTokenCache.Key { .init(teamID: "T", clientID: "c", sub: "s\(i)") }
        for i in 0..<4 { cache.keep("old-\(i)", kid: "k", iat: 1_000, for: key(i)) }
        cache.keep("new-4", kid: "k", iat: 1_300, for: key(4))   // the four others are too old to reuse: dropped
        #expect(cache.count == 1 && cache.reusable(key(4), kid: "k", now: 1_300) == "new-4")
        #expect(cache.reusable(key(0), kid: "k", now: 1_300) == nil)
        for i in 5..<8 { cache.keep("fresh-\(i)", kid: "k", iat: 1_300, for: key(i)) }
        cache.keep("fresh-8", kid: "k", iat: 1_300, for: key(8))  // none too old: emptied, then kept
        #expect(cache.count == 1 && cache.reusable(key(8), kid: "k", now: 1_301) == "fresh-8")
        #expect(cache.reusable(key(8), kid: "other", now: 1_301) == nil, "another signing key: not reused")
    }

    /// Tokens registered as signed in (`seed` does) get their id_tokens signed at registration,
    /// once per valid user; the refresh answers within the window hand those out and sign nothing.
    /// Registered without `sign_in`, nothing is signed until the refresh.
    @Test func usersRegisteredAsSignedInGetTheirIDTokensSignedAtRegistration() throws {
        let f = try SandboxFixture()
        func register(_ prefix: String, signIn: Bool?) throws -> [String: Any]? {
            let tokens = (0..<3).map { i in
                "{\"token\":\"\(prefix)-\(i)\",\"team_id\":\"\(SandboxFixture.teamID)\",\"client_id\":\"\(SandboxFixture.clientID)\","
                    + "\"sub\":\"000111.\(prefix)\(i).0001\",\"state\":\"\(i == 2 ? "revoked" : "valid")\"}"
            }
            let flag = signIn.map { ",\"sign_in\":\($0)" } ?? ""
            return f.json(try f.postJSON("/__sandbox/refresh-tokens", "{\"tokens\":[\(tokens.joined(separator: ","))]\(flag)}"))
        }
        let signedIn = try register("in", signIn: true)
        #expect(signedIn?["registered"] as? Int == 3 && signedIn?["id_tokens_signed"] as? Int == 2, "the two valid users")
        #expect(f.model.stats().idTokensSigned == 2)
        let issuedAt = Int(f.now)
        f.clock.advance(by: .seconds(120))
        for i in 0..<2 {
            let token = try idToken(f, "in-\(i)")
            #expect(token.claims["sub"] as? String == "000111.in\(i).0001" && token.claims["iat"] as? Int == issuedAt)
            #expect(token.claims["aud"] as? String == SandboxFixture.clientID && (token.claims["exp"] as? Int ?? 0) > Int(f.now))
            #expect(try verifies(f, token))
        }
        #expect(f.model.stats().idTokensSigned == 2 && f.model.stats().idTokensReused == 2, "nothing signed on the refresh path")

        let notSignedIn = try register("out", signIn: nil)
        #expect(notSignedIn?["id_tokens_signed"] as? Int == 0)
        _ = try idToken(f, "out-0")
        #expect(f.model.stats().idTokensSigned == 3 && f.model.stats().idTokensReused == 2, "signed when refreshed")
    }
}
