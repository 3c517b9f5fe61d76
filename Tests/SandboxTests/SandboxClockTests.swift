import Foundation
import SIWACrypto
import Testing
import TestSupport
@testable import Sandbox

/// Every instant the sandbox uses comes from its injected clock: the fixture's `ManualClock` moves
/// only when a test advances it, so expiry is tested without waiting and without racing a second
/// boundary.
@Suite struct SandboxClockTests {
    @Test func aClientSecretExpiresWhenTheSandboxClockPassesItsExpCachedOrNot() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let cached = try f.secret(exp: f.now + 600)
        let fresh = try f.secret(exp: f.now + 30)
        #expect(try f.refresh("rt-1", secret: cached).status == 200)
        f.clock.advance(by: .seconds(599))
        #expect(try f.refresh("rt-1", secret: cached).status == 200, "one second before exp")
        let unused = try f.refresh("rt-1", secret: fresh)
        #expect(unused.status == 400 && unused.header("X-Sandbox-Reason") == "expired", "checked, not cached")
        f.clock.advance(by: .seconds(1))
        let late = try f.refresh("rt-1", secret: cached)
        #expect(late.text == #"{"error":"invalid_client"}"# && late.header("X-Sandbox-Reason") == "expired")
        #expect(f.model.stats().clientSecretSignatureChecks == 2, "the cached secret was checked once")
    }

    @Test func aSecretIssuedInTheSandboxesFutureIsRefusedUntilTheClockGetsThere() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        let early = try f.secret(iat: f.now + 120, exp: f.now + 600)
        #expect(try f.refresh("rt-1", secret: early).header("X-Sandbox-Reason") == "iat_in_future")
        f.clock.advance(by: .seconds(60))
        #expect(try f.refresh("rt-1", secret: early).status == 200, "within the 60 s leeway now")
    }

    @Test func idTokensAndNotificationsAreStampedWithTheSandboxClock() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        f.clock.advance(by: .seconds(86_400 + 0.75))
        let stamp = Int(f.now)
        let body = try #require(f.json(try f.refresh("rt-1")))
        let idToken = try JWS.split(try #require(body["id_token"] as? String))
        let claims = try object(idToken.payload)
        #expect(claims["iat"] as? Int == stamp && claims["auth_time"] as? Int == stamp)
        #expect(claims["exp"] as? Int == stamp + 600)

        let minted = try f.postJSON("/__sandbox/notifications",
                                    #"{"events":[{"type":"consent-revoked","sub":"s","client_id":"com.example.app"}]}"#)
        let payload = try #require((f.json(minted)?["payloads"] as? [String])?.first)
        let notification = try object(try JWS.split(payload).payload)
        #expect(notification["iat"] as? Int == stamp && notification["exp"] as? Int == stamp + 300)
        let signed = try f.server.signNotifications([NotificationSpec(type: "email-enabled", sub: "s", clientID: "c")])
        #expect(try object(try JWS.split(signed[0]).payload)["iat"] as? Int == stamp)
    }

    @Test func bearerTokensExpireAnHourLaterOnTheSandboxClockPlusItsOffset() throws {
        let f = try SandboxFixture()
        let reply = try f.post("/auth/token", [("grant_type", "client_credentials"), ("scope", "user.migration"),
                                               ("client_id", SandboxFixture.clientID), ("client_secret", try f.secret())])
        let token = try #require(f.json(reply)?["access_token"] as? String)
        f.clock.advance(by: .seconds(3_000))
        #expect(f.model.bearer(token, now: f.now) != nil)
        f.model.clockOffset = 599
        #expect(f.model.bearer(token, now: f.now + f.model.clockOffset) != nil, "3599 s on the sandbox clock")
        f.clock.advance(by: .seconds(2))
        #expect(f.model.bearer(token, now: f.now + f.model.clockOffset) == nil, "3601 s: expired")
    }
}
