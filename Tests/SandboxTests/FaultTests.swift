import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Sandbox

@Suite(.timeLimit(.minutes(5))) struct FaultTests {
    func script(_ f: SandboxFixture, _ json: String) throws {
        let reply = try f.postJSON("/__sandbox/faults", json)
        #expect(reply.status == 200, "\(reply.text)")
    }

    @Test func scripted429CarriesRetryAfterThenNormalService() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        try script(f, #"{"next":2,"kind":"429","retry_after":7}"#)
        for _ in 0..<2 {
            let r = try f.refresh("rt-1")
            #expect(r.status == 429)
            #expect(r.header("Retry-After") == "7")
            #expect(f.json(r) == nil)
        }
        #expect(try f.refresh("rt-1").status == 200)
        let stats = f.model.stats()
        #expect(stats.faults["429"] == 2)
        #expect(stats.responses["429"] == 2)
        // Faulted requests never reach the model.
        #expect(stats.accessTokensMinted == 1)
    }

    @Test func htmlFaultIsA502WithApplesErrorPage() throws {
        let f = try SandboxFixture()
        try script(f, #"{"next":1,"kind":"html"}"#)
        let r = try f.revoke("whatever")
        #expect(r.status == 502)
        #expect(r.header("Content-Type") == "text/html")
        #expect(r.text.hasPrefix("<html>"))
        #expect(r.text.contains("<center>Apple</center>"))
    }

    @Test func html400AndNoAccessTokenFaults() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        try script(f, #"{"next":1,"kind":"html_400"}"#)
        try script(f, #"{"next":1,"kind":"no_access_token"}"#)
        let html = try f.refresh("rt-1")
        #expect(html.status == 400 && html.header("Content-Type") == "text/html" && html.text.contains("400 Bad Request"))
        let bare = try f.refresh("rt-1")
        #expect(bare.status == 200 && f.json(bare)?["access_token"] == nil && f.json(bare)?["token_type"] as? String == "Bearer")
        #expect(try f.refresh("rt-1").status == 200)
    }

    @Test func resetClosesTheConnectionWithoutAResponse() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        try script(f, #"{"next":1,"kind":"reset"}"#)
        #expect(throws: RawHTTPError.closedWithoutResponse) { try f.refresh("rt-1") }
        #expect(try f.refresh("rt-1").status == 200)
        #expect(f.model.stats().faults["reset"] == 1)
    }

    @Test func truncatedJSONAnd5xxAndScriptedInvalidClient() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        try script(f, #"{"next":1,"kind":"truncated"}"#)
        try script(f, #"{"next":1,"kind":"500"}"#)
        try script(f, #"{"next":1,"kind":"503"}"#)
        try script(f, #"{"next":1,"kind":"invalid_client"}"#)
        let truncated = try f.refresh("rt-1")
        #expect(truncated.status == 200)
        #expect(truncated.header("Content-Type") == "application/json;charset=UTF-8")
        #expect(f.json(truncated) == nil)
        #expect(!truncated.body.isEmpty)
        let e500 = try f.refresh("rt-1")
        #expect(e500.status == 500)
        #expect(f.json(e500) == nil)
        #expect(try f.refresh("rt-1").status == 503)
        #expect(try f.refresh("rt-1").text == #"{"error":"invalid_client"}"#)
        #expect(try f.refresh("rt-1").status == 200)
    }

    @Test func adminAndKeysEndpointsAreNotFaultedButKeysAre() throws {
        let f = try SandboxFixture()
        try script(f, #"{"next":1,"kind":"500"}"#)
        // Admin calls do not consume scripted faults.
        #expect(try f.get("/__sandbox/stats").status == 200)
        #expect(try f.get("/auth/keys").status == 500)
        #expect(try f.get("/auth/keys").status == 200)
    }

    /// A stall holds the answer for the whole stall, then answers normally. The bound is a lower
    /// one (the answer came no sooner than the stall), a check of behaviour, not of speed.
    @Test func stallDelaysThenAnswersNormally() throws {
        let f = try SandboxFixture()
        f.registerToken("rt-1")
        try script(f, #"{"next":1,"kind":"stall","stall_seconds":0.5}"#)
        let secret = try f.secret()
        let start = ContinuousClock.now
        let r = try f.refresh("rt-1", secret: secret)
        let elapsed = ContinuousClock.now - start
        #expect(r.status == 200)
        #expect(f.json(r)?["access_token"] is String)
        #expect(elapsed >= .milliseconds(500), "answered after \(elapsed), before the 0.5 s stall was over")
        #expect(f.model.stats().faults["stall"] == 1)
        #expect(try f.refresh("rt-1", secret: secret).status == 200, "the stall was scripted for one request")
    }

    /// Delayed answers are suspended, not slept on a server thread: with 2 server threads and
    /// 1.5 s of latency, far more than 2 requests reach the handler before the first answer
    /// leaves (blocking threads would admit at most 2). Counted from the sandbox's request log.
    @Test func latencySuspendsAndStillAnswersManyConcurrentRequests() throws {
        // 3 s of latency: time for 16 or more of the 64 requests to arrive even on a loaded machine.
        let f = try SandboxFixture(SandboxConfiguration(latency: .fixed(3000), threads: 2))
        f.registerToken("rt-1")
        let port = f.port
        let body = RawHTTP.form([("client_id", SandboxFixture.clientID), ("client_secret", try f.secret()),
                                 ("grant_type", "refresh_token"), ("refresh_token", "rt-1")])
        f.model.startRequestLog()
        let clients = 64
        let statuses = Mutex<[Int]>([])
        let firstAnswer = Mutex<ContinuousClock.Instant?>(nil)
        let done = DispatchGroup()
        for _ in 0..<clients {   // one thread each: all 64 requests are sent at once
            done.enter()
            Thread {
                let s = (try? RawHTTP.request(port: port, method: "POST", path: "/auth/token",
                                              headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                              body: body, timeoutSeconds: 60))?.status ?? -1
                let now = ContinuousClock.now
                firstAnswer.withLock { $0 = min($0 ?? now, now) }
                statuses.withLock { $0.append(s) }
                done.leave()
            }.start()
        }
        #expect(done.wait(timeout: .now() + 120) == .success, "waiting for \(clients) answers")
        #expect(statuses.withLock { $0 } == Array(repeating: 200, count: clients))
        let first = try #require(firstAnswer.withLock { $0 })
        let records = f.model.requestRecords()
        #expect(records.count == clients && records.allSatisfy { $0.delay == .milliseconds(3000) })
        let heldAtOnce = records.filter { $0.arrival < first }.count
        #expect(heldAtOnce >= 16, "requests held before the first answer: \(heldAtOnce), with 2 server threads")
    }

    @Test func stopReleasesSuspendedConnections() throws {
        let f = try SandboxFixture(SandboxConfiguration(latency: .fixed(60_000)))
        let port = f.port
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<String>("")
        DispatchQueue.global().async {
            let result: String
            do {
                result = "status \(try RawHTTP.request(port: port, method: "GET", path: "/auth/keys", timeoutSeconds: 30).status)"
            } catch {
                result = "\(error)"
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        // Wait until the request is suspended inside the server, then stop it.
        try Poll.blockingUntil("the /auth/keys request to reach the sandbox") { f.model.stats().requests["/auth/keys"] != nil }
        f.server.stop()
        #expect(done.wait(timeout: .now() + 60) == .success, "waiting for the suspended request's outcome")
        // The client is not left hanging for the 60 s latency (it would time out after 30 s).
        #expect(outcome.withLock { $0 } != "\(RawHTTPError.timeout)")
    }

    @Test func seededRandomFaultsAreReproducible() throws {
        func run() throws -> [Int] {
            let f = try SandboxFixture(SandboxConfiguration(faults: FaultRates(serverError: 0.3, tooManyRequests: 0.3), seed: 42))
            return try (0..<30).map { _ in try f.get("/auth/keys").status }
        }
        let a = try run(), b = try run()
        #expect(a == b)
        #expect(Set(a).isSuperset(of: [200, 429]))
    }
}
