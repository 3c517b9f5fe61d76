import Foundation
import SIWACrypto
import Testing
@testable import Sandbox

@Suite struct TokenEndpointTests {
    @Test func validRefreshReturnsAccessAndSignedIDToken() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-valid", sub: "000777.user.0001")
        let reply = try f.refresh("rt-valid")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json;charset=UTF-8")
        #expect(reply.header("Cache-Control") == "no-store")
        let body = try #require(f.json(reply))
        #expect((body["access_token"] as? String)?.isEmpty == false)
        #expect(body["token_type"] as? String == "Bearer")
        #expect(body["expires_in"] as? Int == 3600)
        #expect(body["refresh_token"] == nil)
        let idToken = try #require(body["id_token"] as? String)

        // The id_token verifies against the published JWKS and carries Apple's claims.
        let jwks = try object(f.get("/auth/keys").body)
        let jwk = try #require((jwks["keys"] as? [[String: Any]])?.first)
        let parts = try JWS.split(idToken)
        let header = try object(parts.header)
        #expect(header["alg"] as? String == "RS256")
        #expect(header["kid"] as? String == jwk["kid"] as? String)
        let n = try b64(jwk["n"])
        let e = try b64(jwk["e"])
        let publicKey = try RSAPublicKey(n: n, e: e)
        #expect(publicKey.verifyRS256(signature: parts.signature, message: parts.signingInput))
        let claims = try object(parts.payload)
        #expect(claims["iss"] as? String == "https://appleid.apple.com")
        #expect(claims["aud"] as? String == SandboxFixture.clientID)
        #expect(claims["sub"] as? String == "000777.user.0001")
        let iat = try #require(claims["iat"] as? Int), exp = try #require(claims["exp"] as? Int)
        #expect(exp - iat == 600)
    }

    @Test func refreshWithoutIDTokenWhenConfiguredOff() throws {
        let f = try SandboxFixture(SandboxConfiguration(refreshIDToken: false))
        f.registerToken("rt-valid")
        let body = try #require(f.json(try f.refresh("rt-valid")))
        #expect(body["id_token"] == nil)
        #expect(body["token_type"] as? String == "Bearer")
        #expect(f.model.stats().idTokensSigned == 0)
    }

    @Test(arguments: ["revoked", "unknown", "otherClient"])
    func deadRefreshTokenIsInvalidGrant(_ kind: String) throws {
        let f = try SandboxFixture()
        f.registerToken("rt-revoked", revoked: true)
        f.registerToken("rt-other", clientID: SandboxFixture.otherClientID)
        let token = ["revoked": "rt-revoked", "unknown": "rt-nobody", "otherClient": "rt-other"][kind] ?? ""
        let reply = try f.refresh(token)
        #expect(reply.status == 400)
        #expect(reply.text == #"{"error":"invalid_grant"}"#)
    }

    /// Request-shape errors: (fields, content type, expected error).
    static let shapeCases: [(String, [(String, String)], String, String)] = [
        ("missing refresh_token", [("grant_type", "refresh_token")], "application/x-www-form-urlencoded", "invalid_request"),
        ("code instead of refresh_token", [("grant_type", "refresh_token"), ("code", "rt-1")],
         "application/x-www-form-urlencoded", "unsupported_grant_type"),
        ("misspelled grant type", [("grant_type", "refresh")], "application/x-www-form-urlencoded", "unsupported_grant_type"),
        ("unknown authorization code", [("grant_type", "authorization_code"), ("code", "c1.0.abc")],
         "application/x-www-form-urlencoded", "invalid_grant"),
        ("unsupported parameter", [("grant_type", "refresh_token"), ("refresh_token", "rt-1"), ("grand_type", "x")],
         "application/x-www-form-urlencoded", "invalid_request"),
        ("duplicate parameter", [("grant_type", "refresh_token"), ("refresh_token", "rt-1"), ("refresh_token", "rt-1")],
         "application/x-www-form-urlencoded", "invalid_request"),
        ("JSON content type", [("grant_type", "refresh_token"), ("refresh_token", "rt-1")], "application/json", "invalid_request"),
        ("wrong scope", [("grant_type", "client_credentials"), ("scope", "openid")],
         "application/x-www-form-urlencoded", "invalid_scope"),
    ]

    @Test(arguments: shapeCases.indices)
    func requestShapeErrors(_ index: Int) throws {
        let (name, extra, contentType, expected) = Self.shapeCases[index]
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let fields = [("client_id", SandboxFixture.clientID), ("client_secret", try f.secret())] + extra
        let reply = try f.post("/auth/token", fields, contentType: contentType)
        #expect(reply.status == 400, "\(name)")
        #expect(reply.text == "{\"error\":\"\(expected)\"}", "\(name)")
    }

    @Test func jsonBodyIsInvalidRequest() throws {
        let f = try SandboxFixture()
        let json = "{\"client_id\":\"\(SandboxFixture.clientID)\",\"client_secret\":\"\(try f.secret())\",\"grant_type\":\"refresh_token\",\"refresh_token\":\"x\"}"
        let reply = try f.postJSON("/auth/token", json)
        #expect(reply.status == 400)
        #expect(reply.text == #"{"error":"invalid_request"}"#)
    }

    @Test func clientCredentialsMintsBearerBoundToTeamAndClient() throws {
        let f = try SandboxFixture()
        let reply = try f.post("/auth/token", [("grant_type", "client_credentials"), ("scope", "user.migration"),
                                               ("client_id", SandboxFixture.clientID), ("client_secret", try f.secret())])
        #expect(reply.status == 200)
        let body = try #require(f.json(reply))
        #expect(body["token_type"] as? String == "Bearer")
        #expect(body["expires_in"] as? Int == 3600)
        #expect(body["id_token"] == nil)
        let token = try #require(body["access_token"] as? String)
        let record = try #require(f.model.bearer(token, now: f.now))
        #expect(record.teamID == SandboxFixture.teamID)
        #expect(record.clientID == SandboxFixture.clientID)
        #expect(record.scope == "user.migration")
        #expect(f.model.bearer(token, now: f.now + 3601) == nil)
        #expect(f.model.stats().bearerTokensMinted == 1)
    }

    @Test func oversizedBodyIs413() throws {
        let f = try SandboxFixture()
        let big = [("client_id", SandboxFixture.clientID), ("client_secret", String(repeating: "a", count: 70_000))]
        let reply = try f.post("/auth/token", big)
        #expect(reply.status == 413)
        #expect(reply.text == #"{"error":"invalid_request"}"#)
    }
}
