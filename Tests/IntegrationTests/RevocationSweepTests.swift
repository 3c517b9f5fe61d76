import Clocks
import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// Revocation sweeps end to end: real PostgreSQL, the sandbox over HTTP, real worker processes.
@Suite(.serialized, .timeLimit(.minutes(30))) struct RevocationSweepTests {
    @Test func sweepOverTenThousandDeletedAccountsRevokesEachTokenOnce() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 10_000, revokedFraction: 0.02)   // a few were already invalid at Apple
        let marked = try await world.database.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.accounts SET deleted_at = now()")
        }
        #expect(marked == 10_000)
        let job = try #require(try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRevocationSweep(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test"))
        #expect(job.items == 10_000)
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "64"], environment: world.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")

        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        #expect(truth.revokeRequests == 10_000, "one revoke per token")
        #expect(truth.tokensRevokedMoreThanOnce == 0)
        #expect(truth.revoked == 10_000 && truth.valid == 0)
        #expect(world.sandbox.model.stats().revokes == 10_000)
        let held: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_ciphertext IS NOT NULL OR refresh_token_key_id IS NOT NULL
            """)
        let fingerprints: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_fingerprint IS NOT NULL AND token_status = 'revoked'
            """)
        #expect(held == 0, "stored tokens are wiped")
        #expect(fingerprints == 10_000, "fingerprints stay")
        let outcomes: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND outcome = 'revoked_or_invalid'
            """)
        let audits: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.audit_log WHERE job_id = \(job.jobID) AND action = 'token.revoked_or_invalid'
            """)
        #expect(outcomes == 10_000 && audits == 10_000)
        // Nothing left to sweep: a second plan creates no job.
        let again = try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRevocationSweep(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test")
        #expect(again == nil)

        // Secret scan: logs, results, audit rows and views.
        var haystack = run.stdout + run.stderr
        for table in ["siwa.results", "siwa.audit_log", "siwa.job_progress", "siwa.job_outcomes", "siwa.token_health",
                      "siwa.account_summary", "siwa.notification_summary", "siwa.accounts_to_delete"] {
            let rows = try await world.database.pool.withConnection { conn in
                try await conn.query(SQL(unsafeSQL: "SELECT t::text AS row FROM \(table) t"))
            }
            for row in rows { haystack += try row.decode("row", as: String.self) + "\n" }
        }
        let tokens = try #require(world.seeded).tokens.map(\.token)
        #expect(tokens.count >= 20 && !haystack.isEmpty, "the scan needs tokens and rows to scan")
        #expect(!haystack.contains(".0.mrq") && !tokens.prefix(20).contains { haystack.contains($0) }, "a refresh token leaked")
        #expect(!haystack.contains("eyJ"), "a client secret leaked")
        #expect(!haystack.contains(world.tokenKeyHex))
        await world.tearDown()
    }

    @Test func consentRevokedAccountsAreSweptAndConfigurationErrorsPause() async throws {
        var world = try await SIWAWorld.create(registerKey: false)   // Apple does not know this key
        try await world.seed(accounts: 300, revokedFraction: 0)
        try await world.database.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.accounts SET consent_revoked_at = now() WHERE id % 3 = 0")
        }
        let job = try #require(try await Enqueuer(pool: world.database.pool, clock: SystemClock()).enqueueRevocationSweep(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, createdBy: "test"))
        #expect(job.items == 100)
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "4"], environment: world.environment)
        #expect(run.status == 78)
        #expect(run.stdout.contains("job \(job.jobID) paused"))
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(state == "paused")
        let held: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_ciphertext IS NOT NULL")
        #expect(held == 300, "nothing is wiped without a 200")

        // Fixed configuration: resume, and the sweep finishes.
        try world.sandbox.model.registerTeam(teamID: SIWAWorld.teamID, keyID: SIWAWorld.keyID,
                                             publicKeyPEM: world.privateKey.publicKey.spkiPEM, clientIDs: [SIWAWorld.clientID])
        let resume = try await BinaryProcess.run(["job", "resume", "\(job.jobID)"], environment: world.environment)
        #expect(resume.status == 0, "\(resume.stderr)")
        let rerun = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(rerun.status == 0, "\(rerun.stderr.suffix(1500))")
        let wiped: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_ciphertext IS NULL AND consent_revoked_at IS NOT NULL
            """)
        #expect(wiped == 100)
        #expect(world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID).revokeRequests == 100)
        await world.tearDown()
    }
}
