import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// App transfer end to end with the real binary: team A exports, hands off a CSV, team B imports;
/// real PostgreSQL, the sandbox over HTTP, one worker configured for both teams via SIWA_TEAMS_FILE.
@Suite(.serialized, .timeLimit(.minutes(30))) struct TransferEndToEndTests {
    typealias W = TransferWorld

    @Test func twentyThousandUsersMoveFromTeamAToTeamBExactly() async throws {
        let world = try await W.create()
        let users = try await world.seedSender(count: 20_000)
        let revoked = users.filter(\.revoked)
        #expect(revoked.count == 606)

        // Sending side.
        let exportStarted = Date()
        let export = try await world.run(["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID,
                                          "--target", W.teamB, "--transfer-date", world.today])
        #expect(export.status == 0, "\(export.stderr)")
        let exportJob = try #require(W.jobID(export.stdout))
        let work1 = try await world.run(["work", "--drain", "--concurrency", "128"])
        let exportSeconds = Date().timeIntervalSince(exportStarted)
        #expect(work1.status == 1, "revoked users are per-item failures: \(work1.stderr.suffix(1500))")
        var stats = world.sandbox.model.stats()
        #expect(stats.bearerTokensMinted >= 1 && Double(stats.bearerTokensMinted) <= exportSeconds / 3600 + 2)
        #expect(stats.transferSubsIssued == 20_000 - revoked.count)
        #expect(world.migrationCalls() == 20_000, "one call per user, none repeated")
        let failed = try await world.database.pool.query("""
            SELECT r.apple_error, r.detail->>'reason' AS reason, a.sub
            FROM siwa.results r JOIN siwa.accounts a ON a.id = r.account_id
            WHERE r.job_id = \(exportJob) AND r.outcome = 'failed'
            """)
        #expect(failed.count == revoked.count && !revoked.isEmpty)
        let revokedSubs = Set(revoked.map(\.sub))
        for row in failed {
            #expect(try row.decode("apple_error", as: String.self) == "invalid_request")
            #expect(try row.decode("reason", as: String.self).contains("revoked"))
            #expect(revokedSubs.contains(try row.decode("sub", as: String.self)))
        }

        // Hand-off file: user id + transfer_sub only.
        let csv = world.directory.appendingPathComponent("handoff.csv").path
        let written = try await world.run(["transfer", "export-csv", "--job", "\(exportJob)", "--out", csv])
        #expect(written.status == 0, "\(written.stderr)")
        let text = try String(contentsOfFile: csv, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.first == "external_user_id,transfer_sub" && lines.count == 20_001 - revoked.count)
        #expect(!text.contains("@") && !users.prefix(50).contains { text.contains($0.sub) })

        // Receiving side.
        let load = try await world.run(["transfer", "import-csv", csv, "--team-id", W.teamB, "--client-id", W.clientID,
                                        "--transfer-date", world.today, "--source-team-id", W.teamA])
        #expect(load.status == 0 && load.stdout.contains("loaded import 1: \(20_000 - revoked.count) rows"), "\(load.stderr)")
        world.sandbox.model.resetStats()
        let importStarted = Date()
        let importRun = try await world.run(["transfer", "import", "--import", "1"])
        let importJob = try #require(W.jobID(importRun.stdout))
        let work2 = try await world.run(["work", "--drain", "--concurrency", "128"])
        let importSeconds = Date().timeIntervalSince(importStarted)
        #expect(work2.status == 0, "\(work2.stderr.suffix(1500))")
        stats = world.sandbox.model.stats()
        #expect(stats.bearerTokensMinted >= 1 && Double(stats.bearerTokensMinted) <= importSeconds / 3600 + 2)
        #expect(stats.transferSubsExchanged == 20_000 - revoked.count)

        // Team B's accounts equal the sandbox's truth exactly.
        let truth = Dictionary(uniqueKeysWithValues: world.sandbox.model.migrationTruth(
            fromTeamID: W.teamA, clientID: W.clientID, toTeamID: W.teamB).map { ($0.sub, $0) })
        let rows = try await world.database.pool.query("""
            SELECT external_user_id, sub, email, is_private_email, transfer_sub FROM siwa.accounts WHERE team_id = \(W.teamB)
            """)
        var accountsB: [String: (sub: String, email: String?, isPrivate: Bool, transferSub: String?)] = [:]
        for row in rows {
            accountsB[try row.decode("external_user_id")] = (try row.decode("sub"), try row.decode("email", as: String?.self),
                                                              try row.decode("is_private_email"), try row.decode("transfer_sub", as: String?.self))
        }
        #expect(accountsB.count == 20_000 - revoked.count)
        var mismatches = 0
        for user in users {
            let expected = try #require(truth[user.sub])
            guard let account = accountsB[user.externalUserID] else {
                if !user.revoked { mismatches += 1 }
                continue
            }
            let email = user.privateEmail ? expected.newEmail : user.email
            if user.revoked || account.sub != expected.newSub || account.email != email
                || account.isPrivate != user.privateEmail || account.transferSub != expected.transferSub {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)

        // Email changes per job: old relay -> new relay, real addresses kept.
        let changes = try await world.database.pool.query("""
            SELECT change, count(*)::int AS n, count(*) FILTER (WHERE old_email IS DISTINCT FROM new_email)::int AS changed
            FROM siwa.email_changes WHERE job_id = \(importJob) GROUP BY change
            """)
        var byChange: [String: (n: Int, changed: Int)] = [:]
        for row in changes { byChange[try row.decode("change")] = (try row.decode("n"), try row.decode("changed")) }
        let live = users.filter { !$0.revoked }
        #expect(byChange["relay_updated"]?.n == live.filter(\.privateEmail).count)
        #expect(byChange["relay_updated"]?.changed == live.filter(\.privateEmail).count)
        #expect(byChange["kept_non_relay"]?.n == live.filter { !$0.privateEmail }.count)
        #expect(byChange["kept_non_relay"]?.changed == 0)

        // Sign-in during the window: the transfer_sub claim finds B's account.
        let sample = try #require(live.first)
        let found = try await world.database.pool.query("""
            SELECT external_user_id, matched_via FROM siwa.account_by_transfer_sub(\(W.teamB), \(try #require(truth[sample.sub]).transferSub))
            """)
        #expect(try found.first?.decode("external_user_id", as: String.self) == sample.externalUserID)
        #expect(try found.first?.decode("matched_via", as: String.self) == "recipient")

        // Re-running either job makes no Apple call for items already done.
        world.sandbox.model.resetStats()
        let again = try await world.run(["transfer", "export", "--team-id", W.teamA, "--client-id", W.clientID,
                                         "--target", W.teamB, "--transfer-date", world.today])
        #expect(again.status == 0 && again.stdout.contains("nothing to do: all accounts already have an outcome"),
                "\(again.stdout) \(again.stderr)")
        let importAgain = try await world.run(["transfer", "import", "--import", "1"])
        #expect(importAgain.status == 0 && importAgain.stdout.contains("nothing to do: all rows already have an outcome"),
                "\(importAgain.stdout) \(importAgain.stderr)")
        // The same hand-off file loaded a second time: every row is already migrated, none is sent again.
        let reload = try await world.run(["transfer", "import-csv", csv, "--team-id", W.teamB, "--client-id", W.clientID,
                                          "--transfer-date", world.today, "--source-team-id", W.teamA])
        #expect(reload.status == 0 && reload.stdout.contains("loaded import 2")
                && reload.stdout.contains("\(20_000 - revoked.count) of \(20_000 - revoked.count) rows are already migrated"),
                "\(reload.stdout) \(reload.stderr)")
        let importReload = try await world.run(["transfer", "import", "--import", "2", "--canary", "0"])
        #expect(importReload.status == 0 && importReload.stdout.contains("nothing to do"), "\(importReload.stdout)")
        let work3 = try await world.run(["work", "--drain"])
        #expect(work3.status == 0)
        #expect(world.migrationCalls() == 0 && world.sandbox.model.stats().bearerTokensMinted == 0)
        let zeroJob = try #require(W.jobID(importAgain.stdout))
        let zeroStatus = try await world.run(["transfer", "status", "--job", "\(zeroJob)"])
        #expect(zeroStatus.stdout.contains("[completed]") && zeroStatus.stdout.contains("nothing to do")
                && !zeroStatus.stdout.contains("not planned yet"), "\(zeroStatus.stdout)")

        // No bearer token reached logs, results or audit rows.
        let bearers = world.sandbox.model.issuedAccessTokens()
        #expect(!bearers.isEmpty, "the scan needs the bearer tokens the sandbox issued")
        for token in bearers {
            for output in [work1.stdout, work1.stderr, work2.stdout, work2.stderr] { #expect(!output.contains(token)) }
            let leaks: Int = try await world.database.scalar("""
                SELECT (SELECT count(*) FROM siwa.results WHERE detail::text LIKE '%' || \(token) || '%')
                     + (SELECT count(*) FROM siwa.audit_log WHERE detail::text LIKE '%' || \(token) || '%')
                     + (SELECT count(*) FROM siwa.jobs WHERE coalesce(paused_reason, '') LIKE '%' || \(token) || '%')
                """, as: Int.self)
            #expect(leaks == 0)
        }

        // 60 days left, or 59 if a UTC midnight passed since the job took `world.today` (this test runs minutes).
        let transferDate: String = try await world.database.scalar(
            "SELECT spec->>'transfer_date' FROM siwa.jobs WHERE id = \(importJob)")
        let (status, daysLeft) = try await world.statusAndDaysLeft(job: importJob, transferDate: transferDate)
        #expect(daysLeft[0] == 60 || daysLeft[0] == 59)
        #expect(daysLeft.contains { status.contains("\($0) days left") } && status.contains("rest planned"), "\(status)")
        await world.tearDown()
    }
}
