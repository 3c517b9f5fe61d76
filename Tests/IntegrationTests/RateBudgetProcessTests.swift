import Foundation
import Postgres
import Sandbox
import Testing
import TestSupport
@testable import SIWAJobs

/// The shared rate budget through the real binary, real PostgreSQL and the sandbox over HTTP:
/// one worker process's 429 with `Retry-After` pauses the other worker process too. Assertions
/// on time are lower bounds on the sandbox's own arrival times (nothing came before the
/// `Retry-After` passed), never bounds on how fast anything ran.
@Suite(.serialized) struct RateBudgetProcessTests {
    static let retryAfter = 8

    func admin(_ world: SIWAWorld, _ method: String, _ path: String, _ json: String? = nil) throws -> [String: Any] {
        let reply = try RawHTTP.request(port: world.sandbox.port, method: method, path: path,
                                        headers: json == nil ? [] : [("Content-Type", "application/json")],
                                        body: Array((json ?? "").utf8))
        guard reply.status == 200, let object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] else {
            throw TestFailure("\(method) \(path): \(reply.status) \(reply.text)")
        }
        return object
    }

    /// Worker A's first call gets a 429 with `Retry-After: 8`. Worker B starts once the 429 is in
    /// the team's budget (it never gets one itself). Neither sends anything until the Retry-After
    /// has passed: A's other items wait on its local pause, B reads the team's pause at its first
    /// grant. Both then share the job, every item once, and the counts match the sandbox's truth.
    @Test func oneWorkersRetryAfterPausesTheOtherWorkerProcess() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(20), tls: nil)   // admin() speaks raw HTTP
        try await world.seed(accounts: 120, revokedFraction: 0.1)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_APPLE_RATE_LIMIT"] = "200"
        _ = try admin(world, "POST", "/__sandbox/faults", #"{"next":1,"kind":"429","retry_after":\#(Self.retryAfter)}"#)
        let a = try BinaryProcess(["work", "--drain", "--concurrency", "4", "--worker-id", "worker-a"], environment: env)
        try await Eventually.wait("worker A's 429 recorded in the team's budget", while: a) {
            let n: Int = try await world.database.scalar("SELECT coalesce(sum(count_429), 0)::int FROM siwa.rate_budgets_status")
            return n >= 1
        }
        let b = try BinaryProcess(["work", "--drain", "--concurrency", "16", "--worker-id", "worker-b"], environment: env)
        let (statusA, statusB) = (await a.wait(), await b.wait())
        #expect(statusA == 0, "worker A: \(a.stderr.suffix(2000))")
        #expect(statusB == 0, "worker B: \(b.stderr.suffix(2000))")

        let team = try #require((try admin(world, "GET", "/__sandbox/rate")["teams"] as? [String: Any])?[SIWAWorld.teamID]
            as? [String: Any])
        let throttled = try #require(team["recent_429s"] as? [[String: Any]])
        #expect(throttled.count == 1, "only the scripted 429: \(throttled)")
        let at = try #require(throttled.first?["at"] as? Double)
        let next = try #require(throttled.first?["next_request_at"] as? Double, "requests came after the 429")
        #expect(next >= at + Double(Self.retryAfter), "a request arrived \(next - at) s after the 429, inside its Retry-After")
        #expect(team["early_requests"] as? Int == 0)

        // B paused because of A's 429 (read from the team's budget), never because of its own.
        #expect(a.stderr.contains("apple rate budget: 429: the team's rate is lowered"), "\(a.stderr.suffix(1500))")
        #expect(b.stderr.contains("apple rate budget: paused: a Retry-After is in force for the team"),
                "worker B never saw the team's pause (did it start after the Retry-After passed?): \(b.stderr.suffix(1500))")
        #expect(!b.stderr.contains("apple rate budget: 429"))
        let byB: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.audit_log WHERE job_id = \(job.jobID) AND actor LIKE 'worker-b:%'")
        #expect(byB > 0, "worker B did part of the job")

        let results: Int = try await world.database.scalar(
            "SELECT count(DISTINCT item_id)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        let rows: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 120 && rows == 120)
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        let progress = try #require(try await world.database.pool.query(
            "SELECT valid, invalid, terminal FROM siwa.job_progress WHERE job_id = \(job.jobID)").first)
        #expect(try progress.decode("terminal", as: Int.self) == 120)
        #expect(try progress.decode("valid", as: Int.self) == truth.valid && progress.decode("invalid", as: Int.self) == truth.revoked)
        let status = try #require(try await world.database.pool.query(
            "SELECT rate_rps::float8 AS rate, learned_limit_rps::float8 AS learned, count_429 FROM siwa.rate_budgets_status "
                + "WHERE endpoint = '/auth/token'").first)
        #expect(try status.decode("count_429", as: Int.self) == 1)
        #expect(try status.decode("learned", as: Double.self) == 200)
        #expect(try status.decode("rate", as: Double.self) < 200, "lowered, and still recovering toward the knee")
        await world.tearDown()
    }

    /// A SIGTERM'd worker whose items wait on a long pause releases them at once (uncharged)
    /// instead of sitting out the grace period in a rate wait.
    @Test func aGracefulStopEndsRateWaitsAndReleasesTheItems() async throws {
        var world = try await SIWAWorld.create(tls: nil)   // admin() speaks raw HTTP
        try await world.seed(accounts: 30, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        // The first call is the budget's probe: the other seven wait for its answer, so nothing
        // but that call is sent, however the items are scheduled (RateBudgetPolicy.probes).
        env["SIWA_APPLE_RATE_LIMIT"] = "100"
        _ = try admin(world, "POST", "/__sandbox/faults", #"{"next":1,"kind":"429","retry_after":600}"#)
        let worker = try BinaryProcess(["work", "--concurrency", "8", "--grace-seconds", "600"], environment: env)
        try await Eventually.wait("the 429 recorded", while: worker) {
            let n: Int = try await world.database.scalar("SELECT coalesce(sum(count_429), 0)::int FROM siwa.rate_budgets_status")
            return n >= 1
        }
        try await Eventually.wait("items waiting in flight", while: worker) {
            let n: Int = try await world.database.scalar(
                "SELECT running::int FROM siwa.job_progress WHERE job_id = \(job.jobID)")
            return n > 1
        }
        worker.signal(SIGTERM)
        // With a 600 s grace period, only released rate waits let it exit before the deadline.
        let status = await worker.wait(timeout: .seconds(300))
        #expect(status == 0 || status == 75, "\(worker.stderr.suffix(2000))")
        let requests = (try admin(world, "GET", "/__sandbox/stats")["requests"] as? [String: Int])?["/auth/token"]
        #expect(requests == 1, "nothing but the first call was sent")
        let charged: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND attempt > 0 AND state = 'available'")
        #expect(charged <= 1, "only the item that met the 429 spent an attempt")
        await world.tearDown()
    }
}
