import Foundation
import Testing
@testable import AppleID

/// `exchangeAuthorizationCode`: the request Apple expects (apple-api.md §2.2) and the answers it
/// refuses to treat as a usable exchange.
@Suite struct AuthorizationCodeClientTests {
    static let tokens = #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r.1","id_token":"h.p.s"}"#

    @Test func theCodeGoesOnceWithRedirectURIOnlyWhenGiven() async throws {
        let native = AppleIDClientTests.reply(200, Self.tokens)
        let response = try await AppleIDClientTests.client(native).exchangeAuthorizationCode("c1.0.abc", redirectURI: nil)
        #expect(response.refreshToken == "r.1" && response.idToken == "h.p.s")
        let form = AppleIDClientTests.form(try #require(native.requests.first))
        #expect(form["grant_type"] == "authorization_code" && form["code"] == "c1.0.abc")
        #expect(form["redirect_uri"] == nil && form["client_id"] == "com.example.app" && form["client_secret"] != nil)
        #expect(native.requests.count == 1)

        let web = AppleIDClientTests.reply(200, Self.tokens)
        _ = try await AppleIDClientTests.client(web).exchangeAuthorizationCode("c2", redirectURI: "https://app.example/cb")
        #expect(AppleIDClientTests.form(try #require(web.requests.first))["redirect_uri"] == "https://app.example/cb")
    }

    @Test(arguments: [
        (#"{"access_token":"a","token_type":"Bearer","id_token":"h.p.s"}"#, "missing refresh_token"),
        (#"{"access_token":"a","token_type":"Bearer","refresh_token":"r"}"#, "missing id_token"),
    ])
    func aSuccessWithoutTheTokensIsPermanent(_ body: String, _ why: String) async throws {
        let client = try AppleIDClientTests.client(AppleIDClientTests.reply(200, body))
        do {
            _ = try await client.exchangeAuthorizationCode("c", redirectURI: nil)
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.errorClass == .permanent && error.detail.contains(why), "\(error)")
        }
    }

    @Test func aUsedCodeIsInvalidGrantAndPermanent() async throws {
        let client = try AppleIDClientTests.client(AppleIDClientTests.reply(400, #"{"error":"invalid_grant"}"#))
        do {
            _ = try await client.exchangeAuthorizationCode("c", redirectURI: nil)
            Issue.record("accepted invalid_grant")
        } catch {
            #expect(error.errorClass == .permanent && error.appleError == "invalid_grant")
        }
    }
}
