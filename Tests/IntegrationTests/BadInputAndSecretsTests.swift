import Foundation
import Postgres
import SIWACrypto
import Testing
@testable import SIWAJobs

/// Bad input gets a clear error naming the problem, never a crash; secrets never leak.
@Suite(.serialized, .timeLimit(.minutes(20))) struct BadInputAndSecretsTests {
    @Test func malformedKeyFileIsAConfigurationError() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 10, revokedFraction: 0)
        _ = try await world.enqueue()
        try Data("-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n-----END PRIVATE KEY-----\n".utf8)
            .write(to: URL(fileURLWithPath: world.keyFile))
        let doctor = try await BinaryProcess.run(["doctor"], environment: world.environment)
        #expect(doctor.status == 78)
        #expect(doctor.stdout.contains("FAIL  .p8 key"))
        let work = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(work.status == 78)
        #expect(work.stderr.contains("is not a usable Sign in with Apple key"))
        #expect(!work.stderr.contains("Fatal error"))
        await world.tearDown()
    }

    @Test func wrongKeyIDPausesTheJob() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 50, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_KEY_ID"] = "WRONGKID99"
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "4"], environment: env)
        #expect(run.status == 78)
        #expect(run.stdout.contains("job \(job.jobID) paused"))
        // In the database: the job is paused, no item was charged or finished, and Apple saw only
        // the few calls in flight when invalid_client came back (concurrency 4), not all 50.
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job.jobID)")
        #expect(state == "paused")
        let uncharged: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.job_items WHERE job_id = \(job.jobID) AND state = 'available' AND attempt = 0
            """)
        #expect(uncharged == 50)
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 0)
        let calls = world.sandbox.model.stats().requests["/auth/token"] ?? 0
        #expect(calls >= 1 && calls <= 8, "calls to Apple: \(calls)")
        await world.tearDown()
    }

    @Test func garbageRefreshTokenIsReportedInvalidNotACrash() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 20, revokedFraction: 0)
        let sealed = try world.keyring.seal("garbage token \u{0}\u{1F600}&=+%", accountAAD: "1")
        try await world.database.pool.withConnection { conn in
            try await conn.execute("""
                UPDATE siwa.accounts SET refresh_token_ciphertext = \(sealed.ciphertext), refresh_token_key_id = \(sealed.keyID)
                WHERE id = (SELECT min(id) FROM siwa.accounts)
                """)
        }
        let job = try await world.enqueue()
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        // Apple (the sandbox) answers invalid_grant for a token it never issued: exactly one
        // result is `invalid`, carrying that error, and the other 19 are valid.
        let invalid: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND outcome = 'invalid' AND apple_error = 'invalid_grant'
            """)
        #expect(invalid == 1)
        let valid: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND outcome = 'valid'")
        #expect(valid == 19)
        await world.tearDown()
    }

    @Test func noSecretReachesLogsResultsAuditOrViews() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 500, revokedFraction: 0.1)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_LOG_LEVEL"] = "debug"
        let run = try await BinaryProcess.run(["work", "--drain", "--progress", "--stats"], environment: env)
        #expect(run.status == 0)
        let doctor = try await BinaryProcess.run(["doctor"], environment: env)
        let status = try await BinaryProcess.run(["status", "--job", "\(job.jobID)"], environment: env)

        var haystack = run.stdout + run.stderr + doctor.stdout + doctor.stderr + status.stdout + status.stderr
        for table in ["siwa.results", "siwa.audit_log", "siwa.job_progress", "siwa.job_outcomes", "siwa.token_health",
                      "siwa.account_summary", "siwa.jobs", "siwa.job_items"] {
            let rows = try await world.database.pool.withConnection { conn in
                try await conn.query(SQL(unsafeSQL: "SELECT t::text AS row FROM \(table) t"))
            }
            #expect(!rows.isEmpty, "\(table) should have rows to scan")
            for row in rows { haystack += try row.decode("row", as: String.self) + "\n" }
        }
        let tokens = try #require(world.seeded).tokens.map(\.token)
        #expect(tokens.count == 500)
        #expect(!tokens.contains { haystack.contains($0) }, "a refresh token leaked")
        let pemBody = world.privateKey.pkcs8PEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        #expect(!pemBody.isEmpty)
        #expect(!pemBody.contains { haystack.contains($0) }, ".p8 material leaked")
        // Any client secret minted for this team starts with the same base64url header segment.
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(SIWAWorld.keyID)"}"#.utf8))
        let header2 = Base64URL.encode(Array(#"{"kid":"\#(SIWAWorld.keyID)","alg":"ES256"}"#.utf8))
        #expect(!haystack.contains(String(header.prefix(20))) && !haystack.contains(String(header2.prefix(20))), "a client secret leaked")
        #expect(!haystack.contains("eyJ"), "a JWT (client secret or id_token) leaked")
        #expect(!haystack.contains(world.tokenKeyHex), "the token encryption key leaked")
        let accessTokens = world.sandbox.model.issuedAccessTokens()
        #expect(!accessTokens.isEmpty)
        #expect(!accessTokens.contains { haystack.contains($0) }, "an access token leaked")
        await world.tearDown()
    }
}
