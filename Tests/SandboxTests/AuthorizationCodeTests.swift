import Foundation
import SIWACrypto
import Testing
import TestSupport
@testable import Sandbox

/// The sandbox plays the device (`POST /__sandbox/authorize`) and answers the code exchange as
/// Apple does (`grant_type=authorization_code`): once, within 5 minutes, for the same client and
/// redirect URI.
@Suite struct AuthorizationCodeTests {
    /// `POST /__sandbox/authorize` with `json`; returns the issued token and code.
    func authorize(_ f: SandboxFixture, _ json: String) throws -> (token: String, code: String, sub: String) {
        let reply = try f.postJSON("/__sandbox/authorize", json)
        #expect(reply.status == 200, "\(reply.text)")
        let body = try #require(f.json(reply))
        return (try #require(body["identity_token"] as? String), try #require(body["code"] as? String),
                try #require(body["sub"] as? String))
    }

    func exchange(_ f: SandboxFixture, code: String, clientID: String = SandboxFixture.clientID,
                  redirectURI: String? = nil) throws -> HTTPReply {
        var fields = [("client_id", clientID), ("client_secret", try f.secret(sub: clientID)),
                      ("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return try f.post("/auth/token", fields)
    }

    static let newUser = #"{"team_id":"TEAMA12345","client_id":"com.example.app","nonce":"n-123"}"#

    @Test func theIdentityTokenCarriesApplesClaimsWithTheNonceHash() throws {
        let f = try SandboxFixture()
        let issued = try authorize(f, Self.newUser)
        let parts = try JWS.split(issued.token)
        #expect(try object(parts.header)["alg"] as? String == "RS256")
        let claims = try object(parts.payload)
        #expect(claims["iss"] as? String == "https://appleid.apple.com")
        #expect(claims["aud"] as? String == SandboxFixture.clientID)
        #expect(claims["sub"] as? String == issued.sub)
        #expect(claims["nonce"] as? String == Digest.sha256Hex("n-123"))
        #expect(claims["nonce_supported"] as? Bool == true)
        #expect(claims["real_user_status"] as? Int == 2)
        #expect((claims["email"] as? String)?.hasSuffix("@privaterelay.appleid.com") == true)
        let iat = try #require(claims["iat"] as? Int), exp = try #require(claims["exp"] as? Int)
        #expect(exp - iat == 600)
        #expect(f.model.stats().authorizationsIssued == 1)
    }

    @Test func aCodeWorksOnceAndItsRefreshTokenValidates() throws {
        let f = try SandboxFixture()
        let issued = try authorize(f, Self.newUser)
        let first = try exchange(f, code: issued.code)
        #expect(first.status == 200)
        let body = try #require(f.json(first))
        let refresh = try #require(body["refresh_token"] as? String)
        let idToken = try #require(body["id_token"] as? String)
        #expect(try object(JWS.split(idToken).payload)["sub"] as? String == issued.sub)
        #expect(try f.refresh(refresh).status == 200)
        let again = try exchange(f, code: issued.code)
        #expect(again.text == #"{"error":"invalid_grant"}"#)
        #expect(again.header("X-Sandbox-Reason") == "code_used")
        #expect(f.model.stats().codesExchanged == 1)
    }

    @Test func aCodeExpiresAfterFiveMinutesOnTheSandboxClock() throws {
        let f = try SandboxFixture()
        let issued = try authorize(f, Self.newUser)
        f.model.clockOffset = 301
        let reply = try exchange(f, code: issued.code)
        #expect(reply.status == 400)
        #expect(reply.header("X-Sandbox-Reason") == "code_expired")
    }

    @Test(arguments: [
        ("other client", SandboxFixture.otherClientID, nil as String?, "client_mismatch"),
        ("redirect given, none authorized", SandboxFixture.clientID, "https://app.example/cb", "redirect_uri_mismatch"),
        ("unknown code", SandboxFixture.clientID, nil, "unknown_code"),
    ])
    func mismatchesAreInvalidGrant(_ name: String, _ clientID: String, _ redirectURI: String?, _ reason: String) throws {
        let f = try SandboxFixture()
        let issued = try authorize(f, Self.newUser)
        let reply = try exchange(f, code: reason == "unknown_code" ? "c0.0.sbx.0" : issued.code, clientID: clientID,
                                 redirectURI: redirectURI)
        #expect(reply.text == #"{"error":"invalid_grant"}"#, "\(name)")
        #expect(reply.header("X-Sandbox-Reason") == reason, "\(name)")
        // The code was not spent by the refused attempt.
        #expect(try exchange(f, code: issued.code).status == 200)
    }

    @Test func aWebAuthorizationNeedsItsRedirectURI() throws {
        let f = try SandboxFixture()
        let issued = try authorize(f, #"{"team_id":"TEAMA12345","client_id":"com.example.app","redirect_uri":"https://app.example/cb"}"#)
        #expect(try exchange(f, code: issued.code).header("X-Sandbox-Reason") == "redirect_uri_mismatch")
        #expect(try exchange(f, code: issued.code, redirectURI: "https://app.example/cb").status == 200)
    }

    @Test func aReturningUserKeepsTheirSubAndOverridesShapeTheToken() throws {
        let f = try SandboxFixture()
        let issued = try authorize(f, #"{"team_id":"TEAMA12345","client_id":"com.example.app","sub":"000111.abc.0001","#
            + #""aud":"com.example.elsewhere","iat":1000,"lifetime_seconds":60,"real_user_status":null,"transfer_sub":"t.1"}"#)
        let claims = try object(JWS.split(issued.token).payload)
        #expect(claims["sub"] as? String == "000111.abc.0001")
        #expect(claims["aud"] as? String == "com.example.elsewhere")
        #expect(claims["exp"] as? Int == 1060)
        #expect(claims["real_user_status"] == nil)
        #expect(claims["transfer_sub"] as? String == "t.1")
    }

    @Test func theAuthorizeEndpointRequiresJSON() throws {
        let f = try SandboxFixture()
        let reply = try f.post("/__sandbox/authorize", [("team_id", "TEAMA12345")])
        #expect(reply.status == 415)
        #expect(try f.get("/__sandbox/authorize").status == 405)
        #expect(try f.postJSON("/__sandbox/authorize", #"{"team_id":"","client_id":"c"}"#).status == 400)
    }
}
