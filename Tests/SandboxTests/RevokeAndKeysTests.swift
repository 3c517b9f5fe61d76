import Foundation
import SIWACrypto
import Testing
@testable import Sandbox

@Suite struct RevokeAndKeysTests {
    @Test func revokeIsEmpty200ThenRefreshIsInvalidGrant() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-live")
        #expect(try f.refresh("rt-live").status == 200)
        let revoke = try f.revoke("rt-live")
        #expect(revoke.status == 200)
        #expect(revoke.body.isEmpty)
        #expect(revoke.header("Content-Length") == "0")
        let after = try f.refresh("rt-live")
        #expect(after.status == 400)
        #expect(after.text == #"{"error":"invalid_grant"}"#)
        #expect(f.model.isRevoked(token: "rt-live") == true)
    }

    @Test func unknownTokenRevokeIsAlso200AndRepeatsAreCounted() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-a")
        f.registerToken("rt-b")
        let unknown = try f.revoke("never-issued")
        #expect(unknown.status == 200)
        #expect(unknown.body.isEmpty)
        #expect(try f.revoke("rt-a").status == 200)
        #expect(try f.revoke("rt-a", hint: "access_token").status == 200)
        #expect(f.model.revokeRequests(token: "rt-a") == 2)
        let truth = f.model.truth(teamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID)
        #expect(truth == {
            var t = SandboxTruth()
            t.valid = 1; t.revoked = 1; t.revokeRequests = 2; t.tokensRevokedMoreThanOnce = 1
            return t
        }())
        #expect(f.model.stats().revokes == 3)
    }

    @Test func revokeNeedsClientAuthAndAKnownHint() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-a")
        let der = try f.post("/auth/revoke", [("client_id", SandboxFixture.clientID), ("client_secret", try f.secret(der: true)),
                                              ("token", "rt-a")])
        #expect(der.status == 400)
        #expect(der.text == #"{"error":"invalid_client"}"#)
        let hint = try f.revoke("rt-a", hint: "id_token")
        #expect(hint.text == #"{"error":"invalid_request"}"#)
        let missing = try f.post("/auth/revoke", [("client_id", SandboxFixture.clientID), ("client_secret", try f.secret())])
        #expect(missing.text == #"{"error":"invalid_request"}"#)
        #expect(f.model.isRevoked(token: "rt-a") == false)
    }

    @Test func jwksHasOneRS256SigningKey() throws {
        let f = try SandboxFixture()
        let reply = try f.get("/auth/keys")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json;charset=UTF-8")
        let body = try #require(f.json(reply))
        let keys = try #require(body["keys"] as? [[String: Any]])
        #expect(keys.count == 1)
        let key = try #require(keys.first)
        #expect(Set(key.keys) == ["kty", "kid", "use", "alg", "n", "e"])
        #expect(key["kty"] as? String == "RSA")
        #expect(key["use"] as? String == "sig")
        #expect(key["alg"] as? String == "RS256")
        #expect((key["kid"] as? String)?.isEmpty == false)
        let n = try b64(key["n"])
        #expect(n.count == 256)
        #expect(try b64(key["e"]) == [1, 0, 1])
    }

    @Test func wrongMethodsAndUnknownPaths() throws {
        let f = try SandboxFixture()
        #expect(try f.get("/auth/token").status == 405)
        #expect(try f.post("/auth/keys", []).status == 405)
        #expect(try f.get("/nothing").status == 404)
    }

    @Test func portInUseAndNonLoopbackHostFailToStart() throws {
        let f = try SandboxFixture()
        #expect(f.server.baseURL == "http://127.0.0.1:\(f.port)")
        let clash = SandboxServer(configuration: SandboxConfiguration(port: f.port), model: SandboxModel(),
                                  signer: try SandboxFixture.sharedSigner.get())
        #expect(throws: SandboxStartError.self) { try clash.start() }
        let wide = SandboxServer(configuration: SandboxConfiguration(host: "0.0.0.0"))
        #expect(throws: SandboxStartError.self) { try wide.start() }
        #expect(try f.get("/auth/keys").status == 200)
    }
}
