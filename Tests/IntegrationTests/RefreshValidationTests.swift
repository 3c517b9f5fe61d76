import Clocks
import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// Refresh-token validation end to end: real PostgreSQL, the sandbox over real HTTP, real worker processes.
@Suite(.serialized, .timeLimit(.minutes(30))) struct RefreshValidationTests {
    /// valid/invalid counts of a job, from the job_progress view.
    func counts(_ world: SIWAWorld, job: Int64) async throws -> (valid: Int, invalid: Int, terminal: Int, items: Int) {
        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("SELECT valid, invalid, terminal, items FROM siwa.job_progress WHERE job_id = \(job)")
        }
        let r = try #require(rows.first)
        return (try r.decode("valid"), try r.decode("invalid"), try r.decode("terminal"), try r.decode("items"))
    }

    /// Also through PgBouncer in transaction mode (`route`), where LISTEN cannot work and the workers poll.
    @Test(arguments: DatabaseRoute.allCases) func twoWorkersMatchTheSandboxTruthExactly(route: DatabaseRoute) async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 3000, revokedFraction: 0.03)
        let job = try await world.enqueue()
        #expect(job.items == 3000)
        let args = ["work", "--drain", "--concurrency", "64"]
        let a = try BinaryProcess(args, environment: try world.environment(via: route))
        let b = try BinaryProcess(args, environment: try world.environment(via: route))
        let (sa, sb) = (await a.wait(), await b.wait())
        #expect(sa == 0, "A: \(a.stderr.suffix(1500))")
        #expect(sb == 0, "B: \(b.stderr.suffix(1500))")
        #expect(route == .direct || a.stderr.contains("LISTEN unavailable"), "A went through PgBouncer: \(a.stderr.suffix(800))")
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        let c = try await counts(world, job: job.jobID)
        #expect(c.terminal == 3000 && c.items == 3000)
        #expect(c.valid == truth.valid && c.invalid == truth.revoked && truth.revoked == 90)
        let invalidAccounts: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE token_status = 'invalid'")
        let checked: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE token_checked_at IS NOT NULL")
        #expect(invalidAccounts == truth.revoked && checked == 3000)
        // Planning again the same day finds nothing due: at most one validation per account per day.
        let again = try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRefreshValidation(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test")
        #expect(again == nil, "no job is created when nothing is due")
        await world.tearDown()
    }

    /// Also through PgBouncer in transaction mode (`route`), the killed worker and the rerun alike.
    @Test(arguments: DatabaseRoute.allCases) func killMinusNineThenRerunLosesAndDuplicatesNothing(route: DatabaseRoute) async throws {
        var world = try await SIWAWorld.create(latency: .fixed(20))
        try await world.seed(accounts: 3000, revokedFraction: 0.03)
        let job = try await world.enqueue()
        let first = try BinaryProcess(["work", "--drain", "--concurrency", "32", "--lease-seconds", "3"],
                                      environment: try world.environment(via: route))
        try await Eventually.wait("300 results written", while: first) {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) >= 300
        }
        first.signal(SIGKILL)
        _ = await first.wait()
        let running: Int = try await world.database.scalar("SELECT COALESCE(sum(running), 0)::int FROM siwa.job_progress")
        #expect(running > 0, "the kill should leave leased items behind")
        let rerun = try await BinaryProcess.run(["work", "--drain", "--concurrency", "64"], environment: try world.environment(via: route))
        #expect(rerun.status == 0, "\(rerun.stderr.suffix(1500))")
        #expect(route == .direct || rerun.stderr.contains("LISTEN unavailable"), "through PgBouncer: \(rerun.stderr.suffix(800))")
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        let c = try await counts(world, job: job.jobID)
        #expect(c.terminal == 3000)
        #expect(c.valid == truth.valid && c.invalid == truth.revoked)
        // Duplicates would show in the effects, not in siwa.results (its key is the item): each
        // account has exactly one validation audit row, and the items the kill left behind were
        // redone (attempt > 1) and still have exactly one.
        let audits: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.audit_log WHERE job_id = \(job.jobID) AND action IN ('token.validated', 'token.invalidated')
            """)
        #expect(audits == 3000)
        let duplicated: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM (SELECT account_id FROM siwa.audit_log
                WHERE job_id = \(job.jobID) AND action IN ('token.validated', 'token.invalidated')
                GROUP BY account_id HAVING count(*) > 1) d
            """)
        #expect(duplicated == 0)
        let redone: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND attempt > 1")
        #expect(redone > 0, "the items leased by the killed worker were redone")
        let redoneAudits: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.audit_log a JOIN siwa.job_items i ON i.id = a.item_id
            WHERE i.job_id = \(job.jobID) AND i.attempt > 1 AND a.action IN ('token.validated', 'token.invalidated')
            """)
        #expect(redoneAudits == redone, "each redone item has one audit row")
        let checked: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts a JOIN siwa.job_items i ON i.account_id = a.id
            WHERE i.job_id = \(job.jobID) AND a.token_checked_at IS NOT NULL
            """)
        #expect(checked == 3000)
        await world.tearDown()
    }

    @Test func invalidClientPausesTheJobAfterFewCalls() async throws {
        var world = try await SIWAWorld.create(registerKey: false)   // Apple does not know this team's key
        try await world.seed(accounts: 2000, revokedFraction: 0)
        let job = try await world.enqueue()
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "16"], environment: world.environment)
        #expect(run.status == 78)
        #expect(run.stdout.contains("job \(job.jobID) paused"))
        #expect(run.stdout.contains("check the team ID, the key ID (kid)"))
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(state == "paused")
        let calls = world.sandbox.model.stats().requests["/auth/token"] ?? 0
        #expect(calls > 0 && calls <= 16 + 500, "calls made: \(calls)")
        #expect(calls < 2000)
        let untouched: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available' AND attempt = 0
            """)
        #expect(untouched == 2000)
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results")
        #expect(results == 0)
        await world.tearDown()
    }

    @Test func sigtermLetsInFlightItemsFinish() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(300))
        try await world.seed(accounts: 400, revokedFraction: 0)
        let job = try await world.enqueue()
        let worker = try BinaryProcess(["work", "--concurrency", "16", "--grace-seconds", "20"], environment: world.environment)
        // Wait until 16 calls reached Apple (in flight), not merely 16 claimed rows: claimed items
        // still being prepared or sitting in the prefetch buffer are released on stop, by design.
        try await Eventually.wait("16 /auth/token requests at the sandbox", while: worker) {
            (world.sandbox.model.stats().requests["/auth/token"] ?? 0) >= 16
        }
        worker.signal(SIGTERM)
        let status = await worker.wait()
        #expect(status == 0, "\(worker.stderr.suffix(1500))")
        let running: Int = try await world.database.scalar("SELECT COALESCE(sum(running), 0)::int FROM siwa.job_progress")
        #expect(running == 0)
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results >= 16, "in-flight items finished and were written")
        let line = worker.stdout.split(separator: "\n").first { $0.hasPrefix("worker:") } ?? ""
        #expect(line.contains("succeeded=\(results) "), "\(line)")
        let chargedButOpen: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available' AND attempt <> 0
            """)
        #expect(chargedButOpen == 0)
        await world.tearDown()
    }

    @Test func retryAfterIsHonouredAndHTMLOrTruncatedBodiesAreRetried() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 200, revokedFraction: 0.05)
        let job = try await world.enqueue()
        let admin = world.admin
        try await admin.scriptFault("429", count: 20, retryAfter: 2)
        try await admin.scriptFault("html", count: 10)
        try await admin.scriptFault("truncated", count: 10)
        world.sandbox.model.startRequestLog()
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8"], environment: world.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        let c = try await counts(world, job: job.jobID)
        #expect(c.terminal == 200 && c.valid == truth.valid && c.invalid == truth.revoked)
        let faults = world.sandbox.model.stats().faults
        #expect(faults["429"] == 20 && faults["html"] == 10 && faults["truncated"] == 10)
        let retried: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE attempt > 1")
        #expect(retried >= 40)

        // Retry-After, measured by the sandbox itself: each token answered 429 with Retry-After: 2
        // came back, and its next request arrived no sooner than 2 s after the 429.
        let requests = world.sandbox.model.requestRecords().filter { $0.path == "/auth/token" }
        let limited = requests.filter { $0.fault == "429" }
        #expect(limited.count == 20 && limited.allSatisfy { $0.retryAfterSeconds == 2 && $0.refreshToken != nil })
        let byToken = Dictionary(grouping: requests) { $0.refreshToken ?? "" }
        var gaps: [Duration] = []
        for answer in limited {
            let later = byToken[answer.refreshToken ?? "", default: []].filter { $0.arrival > answer.arrival }
            guard let next = later.min(by: { $0.arrival < $1.arrival }) else {
                Issue.record("a token answered 429 was never asked again")
                continue
            }
            gaps.append(next.arrival - answer.arrival)
        }
        #expect(gaps.count == limited.count)
        #expect(gaps.allSatisfy { $0 >= .seconds(2) }, "429 to retry, shortest: \(gaps.sorted().prefix(3))")
        // The database agrees: exactly those accounts' items were retried after a 429.
        let subs = Set(limited.compactMap(\.refreshToken))
        let limitedSubs = world.seeded?.tokens.filter { subs.contains($0.token) }.map(\.sub) ?? []
        #expect(limitedSubs.count == 20)
        let rows: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items i JOIN siwa.accounts a ON a.id = i.account_id
            WHERE i.job_id = \(job.jobID) AND i.attempt > 1 AND i.last_error LIKE '%429%' AND a.sub = ANY(\(limitedSubs))
            """)
        #expect(rows == 20, "items retried after the 429, by account")
        await world.tearDown()
    }
}
