import AppleID
import Clocks
import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// Issue 8 §10, odd answers from Apple through the real binary, the sandbox and PostgreSQL: a 400
/// with an HTML body is retried once, then fails; a refresh 200 without `access_token` is valid.
@Suite(.serialized, .timeLimit(.minutes(20))) struct AppleAnswerEdgeTests {
    @Test func aNonJSON400IsRetriedOnceThenFailsEachKind() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 1, revokedFraction: 0)
        let admin = world.admin
        let job = try await world.enqueue()
        try await admin.scriptFault("html_400", count: 5)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(run.status == 1, "the item failed: \(run.stdout) \(run.stderr.suffix(1500))")
        #expect(world.sandbox.model.stats().requests["/auth/token"] == 2, "two calls, not five")
        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT r.outcome, r.http_status, r.detail->>'reason' AS reason, i.attempt, i.state
                FROM siwa.results r JOIN siwa.job_items i ON i.id = r.item_id WHERE r.job_id = \(job.jobID)
                """)
        }
        let row = try #require(rows.first)
        #expect(try row.decode("outcome", as: String.self) == "failed" && row.decode("state", as: String.self) == "failed")
        #expect(try row.decode("http_status", as: Int?.self) == 400 && row.decode("attempt", as: Int.self) == 2)
        let reason: String = try row.decode("reason")
        #expect(reason == "unparseable response body (text/html); again on attempt 2, so not retried further", "\(reason)")

        // The revocation sweep follows the same rule.
        try await world.database.pool.execute("UPDATE siwa.accounts SET deleted_at = now()")
        let sweep = try #require(try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRevocationSweep(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test"), "one account is due for the sweep")
        world.sandbox.model.resetStats()
        try await admin.scriptFault("html_400", count: 5)
        let revoke = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(revoke.status == 1, "\(revoke.stderr.suffix(1500))")
        #expect(world.sandbox.model.stats().requests["/auth/revoke"] == 2)
        let swept: String = try await world.database.scalar("SELECT outcome FROM siwa.results WHERE job_id = \(sweep.jobID)")
        #expect(swept == "failed")
        await world.tearDown()
    }

    @Test func aRefresh200WithoutAccessTokenIsValidWithAWarning() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 2, revokedFraction: 0)
        let job = try await world.enqueue()
        try await world.admin.scriptFault("no_access_token", count: 1)
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "1"], environment: world.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT r.outcome, coalesce(r.detail->>'warning', '') AS warning, a.token_status
                FROM siwa.results r JOIN siwa.accounts a ON a.id = r.account_id WHERE r.job_id = \(job.jobID) ORDER BY r.item_id
                """)
        }
        #expect(rows.count == 2)
        #expect(try rows.allSatisfy { try $0.decode("outcome", as: String.self) == "valid" && $0.decode("token_status", as: String.self) == "valid" })
        let warnings = try rows.map { try $0.decode("warning", as: String.self) }
        #expect(warnings.filter { $0 == TokenResponse.missingAccessTokenWarning }.count == 1 && warnings.filter(\.isEmpty).count == 1, "\(warnings)")
        await world.tearDown()
    }
}

