import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// The transfer's safety rails with the real binary: target checks before any call and the canary.
@Suite(.serialized, .timeLimit(.minutes(30))) struct TransferSafetyTests {
    typealias W = TransferWorld

    static func exportArgs(_ world: W, target: String = W.teamB, date: String? = nil, canary: Int = 20) -> [String] {
        ["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID, "--target", target,
         "--transfer-date", date ?? world.today, "--canary", "\(canary)"]
    }

    @Test func targetEqualToOwnTeamOrMalformedFailsBeforeAnyAppleCall() async throws {
        let world = try await W.create()
        _ = try await world.seedSender(count: 50)
        // A malformed target is a usage error naming the flag (64), from the parser.
        for target in ["teamb67890", "TEAMB6789", "TEAMB67890X", "TEAM-67890"] {
            let run = try await world.run(Self.exportArgs(world, target: target))
            #expect(run.status == 64 && run.stderr.contains("--target: expected a 10-character Apple Team ID"), "\(target): \(run.stderr)")
        }
        // The sending team's own ID is well formed, and refused as data (65).
        let own = try await world.run(Self.exportArgs(world, target: W.teamA))
        #expect(own.status == 65 && own.stderr.contains("refused: target") && own.stderr.contains("is the sending team itself"),
                "\(own.stderr)")
        let jobs: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.jobs")
        #expect(jobs == 0)
        // A job that bypassed the enqueue check (written by hand) is refused by the worker, still before any call.
        try await world.database.pool.execute("""
            WITH j AS (INSERT INTO siwa.jobs (kind, spec, item_count) VALUES ('transfer-export',
                jsonb_build_object('team_id', \(W.teamA)::text, 'client_id', \(W.clientID)::text, 'target', \(W.teamA)::text,
                                   'transfer_date', \(world.today)::text), 50) RETURNING id),
            t AS (INSERT INTO siwa.transfer_jobs (job_id, direction, team_id, client_id, peer_team_id, transfer_date,
                                                  canary_size, canary_remaining, released_at)
                  SELECT id, 'export', \(W.teamA), \(W.clientID), \(W.teamA), current_date, 0, 0, now() FROM j)
            INSERT INTO siwa.job_items (job_id, account_id) SELECT j.id, a.id FROM j, siwa.accounts a
            """)
        let work = try await world.run(["work", "--drain", "--concurrency", "16"])
        #expect(work.status == 78 && work.stdout.contains("is the sending team itself"), "\(work.stdout)")
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs")
        #expect(state == "paused")
        #expect(world.sandbox.model.stats().requests.isEmpty, "no Apple call at all")
        await world.tearDown()
    }

    @Test func aConfigurationErrorInTheCanaryStopsTheJobAfterAtMostTheCanarysCalls() async throws {
        let world = try await W.create()
        _ = try await world.seedSender(count: 1_000)
        let run = try await world.run(Self.exportArgs(world, canary: 10))
        let job = try #require(W.jobID(run.stdout))
        #expect(run.stdout.contains("with 10 canary items"))
        // The token mint goes through; every migration call after it is refused as invalid_client.
        let admin = world.admin
        try await admin.scriptFault("pass", count: 1)
        try await admin.scriptFault("invalid_client", count: 100_000)
        let work = try await world.run(["work", "--drain", "--concurrency", "128"])
        #expect(work.status == 78 && work.stdout.contains("job \(job) paused"), "\(work.stdout) \(work.stderr.suffix(800))")
        #expect(work.stdout.contains("rejected the client configuration (invalid_client)"))
        let calls = world.migrationCalls()
        #expect(calls >= 1 && calls <= 10, "migration calls: \(calls)")
        #expect(world.sandbox.model.stats().bearerTokensMinted == 1)
        let items: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job)")
        let uncharged: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job) AND state = 'available' AND attempt = 0
            """)
        #expect(items == 10 && uncharged == 10, "nothing beyond the canary was planned or charged")
        let status = try await world.run(["transfer", "status", "--job", "\(job)"])
        #expect(status.stdout.contains("[paused]") && status.stdout.contains("10 not finished, rest not planned yet"), "\(status.stdout)")

        // Fixed: resume; the canary passes and plans the rest.
        try await admin.clearFaults()
        #expect(try await world.run(["job", "resume", "\(job)"]).status == 0)
        let rest = try await world.run(["work", "--drain", "--concurrency", "64"])
        #expect(rest.status == 1, "revoked users fail per item: \(rest.stderr.suffix(800))")
        let done: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_subs")
        #expect(done == 1_000)
        let planned: Int = try await world.database.scalar("SELECT item_count FROM siwa.jobs WHERE id = \(job)")
        #expect(planned == 1_000)
        await world.tearDown()
    }

    @Test func aCanaryWhereEveryUserFailsPausesBeforeTheRestRuns() async throws {
        let world = try await W.create()
        _ = try await world.seedSender(count: 300, revokedEvery: 1)   // everyone revoked
        let run = try await world.run(Self.exportArgs(world, canary: 5))
        let job = try #require(W.jobID(run.stdout))
        let work = try await world.run(["work", "--drain", "--concurrency", "32"])
        #expect(work.status == 78 && work.stdout.contains("none of the first 5 items succeeded"), "a drain that leaves a paused job: \(work.stdout)")
        #expect(world.migrationCalls() == 5)
        let reason: String = try await world.database.scalar("SELECT coalesce(paused_reason, '') FROM siwa.jobs WHERE id = \(job)")
        #expect(reason.contains("none of the first 5 items succeeded"), "\(reason)")
        let audit: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.audit_log WHERE job_id = \(job) AND action = 'transfer.canary_failed'
            """)
        #expect(audit == 1)
        await world.tearDown()
    }
}
