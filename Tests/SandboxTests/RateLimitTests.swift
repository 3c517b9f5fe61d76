import Foundation
import SIWACrypto
import Testing
import TestSupport
@testable import Sandbox

/// The sandbox's per-team rate limit (a token bucket answering 429 with Retry-After) and its
/// per-team counters at `GET /__sandbox/rate`. Time is the fixture's manual clock.
@Suite struct RateLimitTests {
    func rate(_ f: SandboxFixture) throws -> [String: Any] {
        let reply = try f.get("/__sandbox/rate")
        #expect(reply.status == 200, "\(reply.text)")
        return try object(reply.body)
    }

    func team(_ f: SandboxFixture, _ id: String = SandboxFixture.teamID) throws -> [String: Any] {
        try #require((try rate(f)["teams"] as? [String: Any])?[id] as? [String: Any])
    }

    @Test func anEmptyBucketAnswers429WithRetryAfterUntilItRefills() throws {
        let f = try SandboxFixture(SandboxConfiguration(rateLimit: RateLimitSettings(rps: 10, burst: 2, retryAfterSeconds: 3)))
        f.registerToken("rt-1")
        #expect(try f.refresh("rt-1").status == 200)
        #expect(try f.revoke("rt-unknown").status == 200)     // /auth/revoke shares the team's bucket
        let throttled = try f.refresh("rt-1")
        #expect(throttled.status == 429)
        #expect(throttled.header("Retry-After") == "3")
        #expect(try f.get("/auth/keys").status == 200)      // not a budgeted endpoint
        f.clock.advance(by: .milliseconds(150))            // 1.5 tokens at 10/s
        #expect(try f.refresh("rt-1").status == 200)
        #expect(try f.refresh("rt-1").status == 429)
        let stats = f.model.stats()
        #expect(stats.throttled == 2)
        #expect(stats.responses["429"] == 2)
        #expect(stats.faults["429"] == nil)
        let t = try team(f)
        #expect(t["accepted"] as? Int == 3)
        #expect(t["throttled"] as? Int == 2)
        // The second 429 arrived inside the first one's Retry-After, and so did the request between.
        #expect(t["early_requests"] as? Int == 2)
        let recent = try #require(t["recent_429s"] as? [[String: Any]])
        #expect(recent.count == 2)
        #expect(recent.first?["retry_after"] as? Int == 3)
        #expect(recent.first?["next_request_at"] is Double)
        #expect(recent.last?["next_request_at"] is NSNull || recent.last?["next_request_at"] == nil)
    }

    @Test func eachTeamHasItsOwnBucketAndTheAdminAPISetsAndLiftsLimits() throws {
        let f = try SandboxFixture()
        let other = try P256PrivateKey.generate()
        try f.model.registerTeam(teamID: "TEAMB12345", keyID: "KEYB123456", publicKeyPEM: other.publicKey.spkiPEM,
                                 clientIDs: [SandboxFixture.clientID])
        f.registerToken("rt-1")
        let set = try f.postJSON("/__sandbox/rate-limit", #"{"team_id":"TEAMA12345","rps":1,"burst":1,"retry_after":2}"#)
        #expect(set.status == 200, "\(set.text)")
        #expect(try f.refresh("rt-1").status == 200)
        #expect(try f.refresh("rt-1").status == 429)
        // Team B is not limited: its answers are Apple's (invalid_grant: the token is team A's).
        let otherSecret = try f.secret(iss: "TEAMB12345", kid: "KEYB123456", signingKey: other)
        #expect(try f.refresh("rt-1", secret: otherSecret).status == 400)
        #expect(try f.postJSON("/__sandbox/rate-limit", #"{"team_id":"TEAMA12345","rps":0}"#).status == 200)
        #expect(try f.refresh("rt-1").status == 200)
        #expect(try team(f, "TEAMB12345")["throttled"] as? Int == 0)
    }

    @Test func perSecondCountsChartTheAcceptedRate() throws {
        let f = try SandboxFixture(SandboxConfiguration(rateLimit: RateLimitSettings(rps: 2, burst: 2)))
        f.registerToken("rt-1")
        let start = Int(f.now.rounded(.down))
        for _ in 0..<3 { _ = try f.refresh("rt-1") }         // 2 accepted, 1 throttled
        f.clock.advance(by: .seconds(1))
        for _ in 0..<3 { _ = try f.refresh("rt-1") }         // 2 accepted, 1 throttled
        let seconds = try #require(try team(f)["seconds"] as? [[String: Any]])
        #expect(seconds.map { $0["t"] as? Int } == [start, start + 1])
        #expect(seconds.map { $0["accepted"] as? Int } == [2, 2])
        #expect(seconds.map { $0["throttled"] as? Int } == [1, 1])
        #expect(try f.postJSON("/__sandbox/reset-stats", "{}").status == 200)
        #expect(try team(f)["accepted"] as? Int == 0)
        #expect(f.model.stats().throttled == 0)
    }

    @Test func badLimitsAreRefusedNamingTheField() throws {
        let f = try SandboxFixture()
        for (body, field) in [(#"{"rps":-1}"#, "rps"), (#"{"rps":5,"burst":0}"#, "burst"),
                              (#"{"rps":5,"retry_after":-2}"#, "retry_after"), (#"{"team_id":"","rps":5}"#, "team_id"),
                              (#"{"burst":5}"#, "rps")] {
            let reply = try f.postJSON("/__sandbox/rate-limit", body)
            #expect(reply.status == 400, "\(body)")
            #expect(reply.text.contains(field), "\(body): \(reply.text)")
        }
        #expect(try f.get("/__sandbox/rate-limit").status == 405)
    }
}
