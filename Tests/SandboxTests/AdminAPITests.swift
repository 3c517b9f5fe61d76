import Foundation
import SIWACrypto
import Testing
import TestSupport
@testable import Sandbox

@Suite struct AdminAPITests {
    @Test func registerTeamOverHTTPThenAuthenticate() throws {
        let f = try SandboxFixture()
        let key = try P256PrivateKey.generate()
        let body: [String: Any] = ["team_id": "TEAMB00002", "key_id": "KEYB000002", "public_key_pem": key.publicKey.spkiPEM,
                                   "client_ids": ["com.b.app"]]
        let reply = try f.postJSON("/__sandbox/teams", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
        #expect(reply.status == 200)
        f.model.registerRefreshTokens([SandboxRefreshToken(token: "rt-b", teamID: "TEAMB00002", clientID: "com.b.app", sub: "s")])
        let secret = try f.secret(iss: "TEAMB00002", kid: "KEYB000002", sub: "com.b.app", signingKey: key)
        #expect(try f.refresh("rt-b", clientID: "com.b.app", secret: secret).status == 200)
        // Team A's token is not valid for team B's client.
        f.registerToken("rt-a")
        #expect(try f.refresh("rt-a", clientID: "com.b.app", secret: secret).status == 400)
    }

    @Test(arguments: [
        (#"{"team_id":"T","key_id":"K","client_ids":[]}"#, "public_key_pem: required"),
        (#"{"team_id":"T","key_id":"K","public_key_pem":"nope","client_ids":["a"]}"#, "public_key_pem: not a P-256 public key PEM"),
        (#"{"team_id":5,"key_id":"K","public_key_pem":"x","client_ids":[]}"#, "team_id: expected String"),
        ("not json", "body: not valid JSON"),
    ])
    func badTeamBodiesNameTheField(_ json: String, _ prefix: String) throws {
        let f = try SandboxFixture()
        let reply = try f.postJSON("/__sandbox/teams", json)
        #expect(reply.status == 400)
        let message = try #require(f.json(reply)?["message"] as? String)
        #expect(message.hasPrefix(prefix), "\(message)")
    }

    @Test func bulkTokensTruthAndStats() throws {
        let f = try SandboxFixture()
        var tokens: [String] = []
        for i in 0..<2000 {
            let state = i % 4 == 0 ? "revoked" : "valid"
            tokens.append("{\"token\":\"bulk-\(i)\",\"team_id\":\"\(SandboxFixture.teamID)\",\"client_id\":\"\(SandboxFixture.clientID)\",\"sub\":\"u\(i)\",\"state\":\"\(state)\"}")
        }
        let load = try f.postJSON("/__sandbox/refresh-tokens", "{\"tokens\":[\(tokens.joined(separator: ","))]}")
        #expect(load.status == 200)
        #expect(f.json(load)?["registered"] as? Int == 2000)
        #expect(try f.refresh("bulk-1").status == 200)
        #expect(try f.refresh("bulk-0").status == 400)
        #expect(try f.revoke("bulk-1").status == 200)

        let truth = try f.get("/__sandbox/truth?team_id=\(SandboxFixture.teamID)&client_id=\(SandboxFixture.clientID)")
        #expect(truth.status == 200)
        let t = try #require(f.json(truth))
        #expect(t["valid"] as? Int == 1499)
        #expect(t["revoked"] as? Int == 501)
        #expect(t["revoke_requests"] as? Int == 1)
        #expect(try f.get("/__sandbox/truth?team_id=\(SandboxFixture.teamID)").status == 400)

        let stats = try #require(f.json(try f.get("/__sandbox/stats")))
        let requests = try #require(stats["requests"] as? [String: Int])
        #expect(requests["/auth/token"] == 2)
        #expect(requests["/auth/revoke"] == 1)
        #expect((stats["errors"] as? [String: Int])?["invalid_grant"] == 1)
        #expect(stats["revokes"] as? Int == 1)
        #expect(stats["id_tokens_signed"] as? Int == 1)

        #expect(try f.postJSON("/__sandbox/reset-stats", "{}").status == 200)
        #expect(f.model.stats().requests["/auth/token"] == nil)
    }

    /// The admin API is unauthenticated: it answers only loopback `Host`s (no DNS rebinding) and
    /// JSON `POST`s (no cross-site form).
    @Test func onlyLoopbackHostsAndJSONPostsReachTheAdminAPI() throws {
        let f = try SandboxFixture()
        let spec = #"{"events":[{"type":"account-delete","sub":"000123.abc.0456","client_id":"com.example.app"}]}"#
        let plain = try RawHTTP.request(port: f.port, method: "POST", path: "/__sandbox/notifications",
                                        headers: [("Content-Type", "text/plain")], body: Array(spec.utf8))
        #expect(plain.status == 415, "\(plain.text)")
        #expect(!plain.text.contains("payloads"), "nothing was signed: \(plain.text)")
        #expect(try f.post("/__sandbox/reset-stats", []).status == 415, "a form is not JSON")
        for host in ["evil.example.com", "127.0.0.1.evil.example.com:80", "attacker.test:\(f.port)"] {
            let rebound = try RawHTTP.request(port: f.port, method: "POST", path: "/__sandbox/notifications",
                                              headers: [("Content-Type", "application/json")], body: Array(spec.utf8), host: host)
            #expect(rebound.status == 421, "Host \(host): \(rebound.text)")
            #expect(try RawHTTP.request(port: f.port, method: "GET", path: "/__sandbox/truth", host: host).status == 421)
        }
        for host in ["127.0.0.1:\(f.port)", "localhost:\(f.port)", "[::1]:\(f.port)"] {
            #expect(try RawHTTP.request(port: f.port, method: "POST", path: "/__sandbox/notifications",
                                        headers: [("Content-Type", "application/json")], body: Array(spec.utf8),
                                        host: host).status == 200, "Host \(host)")
        }
    }

    @Test func badTokenStateNamesTheIndex() throws {
        let f = try SandboxFixture()
        let reply = try f.postJSON("/__sandbox/refresh-tokens",
                                   #"{"tokens":[{"token":"a","team_id":"T","client_id":"c","sub":"s"},{"token":"b","team_id":"T","client_id":"c","sub":"s","state":"dead"}]}"#)
        #expect(reply.status == 400)
        #expect(f.json(reply)?["message"] as? String == #"tokens[1].state: expected "valid" or "revoked""#)
        let missing = try f.postJSON("/__sandbox/refresh-tokens", #"{"tokens":[{"token":"a","team_id":"T","sub":"s"}]}"#)
        #expect(f.json(missing)?["message"] as? String == "tokens[0].client_id: required")
    }

    @Test func latencyAndFaultControls() throws {
        let f = try SandboxFixture()
        #expect(try f.postJSON("/__sandbox/latency", #"{"fixed_ms":5}"#).status == 200)
        #expect(f.server.faultPlan?.latency == .fixed(5))
        #expect(try f.postJSON("/__sandbox/latency", #"{"min_ms":1,"max_ms":3}"#).status == 200)
        #expect(f.server.faultPlan?.latency == .uniform(1, 3))
        #expect(try f.postJSON("/__sandbox/latency", "{}").status == 200)
        #expect(f.server.faultPlan?.latency == LatencyDistribution.none)
        let bad = try f.postJSON("/__sandbox/latency", #"{"min_ms":1}"#)
        #expect(f.json(bad)?["message"] as? String == "max_ms: required with its pair")

        let kind = try f.postJSON("/__sandbox/faults", #"{"next":1,"kind":"teapot"}"#)
        #expect(kind.status == 400)
        #expect((f.json(kind)?["message"] as? String)?.hasPrefix("kind: expected one of 429, 500") == true)
        #expect(try f.postJSON("/__sandbox/faults", #"{"rates":{"too_many_requests":1}}"#).status == 200)
        #expect(try f.get("/auth/keys").status == 429)
        #expect(try f.postJSON("/__sandbox/faults", #"{"rates":{"too_many_requests":0}}"#).status == 200)
        #expect(try f.get("/auth/keys").status == 200)
        let sum = try f.postJSON("/__sandbox/faults", #"{"rates":{"stall":0.7,"html_error":0.7}}"#)
        #expect(f.json(sum)?["message"] as? String == "rates: probabilities must sum to at most 1")
    }
}
