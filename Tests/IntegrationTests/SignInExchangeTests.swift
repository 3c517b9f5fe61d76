import Clocks
import Foundation
import Postgres
import SIWACrypto
import SIWAJobs
import Testing

/// Acceptance of issue #10 parts 1 and 2, end to end: the real binary, real PostgreSQL, and the
/// sandbox over real HTTP.
@Suite(.serialized) struct SignInExchangeTests {
    static let users = 1_000

    @Test(.timeLimit(.minutes(5)))
    func usersAuthorizedThroughTheSandboxAreCreatedOnceAndValidateNightly() async throws {
        let w = try await SignInWorld.create()
        let users = try await w.authorizeUsers(Self.users)
        #expect(users.count == Self.users)
        w.sandbox.model.resetStats()
        // Half give the raw nonce, half its SHA-256 hex (both forms an app may hold).
        var ids: [Int64] = []
        for (i, user) in users.enumerated() {
            if i.isMultiple(of: 2) {
                ids.append(try await w.submit(user))
            } else {
                ids.append(try await w.submit(user, nonceSHA256: Digest.sha256Hex(user.nonce ?? "")))
            }
        }
        let outcomes = try await w.outcomes(ids)
        #expect(outcomes.values.filter { $0 == "created" }.count == Self.users, "\(Set(outcomes.values))")
        #expect(w.tokenCalls == Self.users)
        #expect(w.sandbox.model.stats().codesExchanged == Self.users)
        let db = w.database
        #expect(try await db.scalar("""
            SELECT count(*)::int FROM siwa.accounts
            WHERE refresh_token_ciphertext IS NOT NULL AND token_status = 'valid' AND external_user_id = sub
            """, as: Int.self) == Self.users)
        #expect(try await db.scalar("""
            SELECT count(*)::int FROM siwa.sign_ins
            WHERE identity_token IS NULL AND authorization_code IS NULL AND nonce IS NULL
              AND identity_token_fingerprint LIKE 'hmac:%' AND code_fingerprint LIKE 'hmac:%' AND account_id IS NOT NULL
            """, as: Int.self) == Self.users)
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.audit_log WHERE action = 'sign_in.created'", as: Int.self) == Self.users)
        #expect(try await db.scalar("SELECT min(priority)::int FROM siwa.jobs WHERE kind = 'sign-in'", as: Int.self) == 0)

        // The next nightly validation finds every stored token valid.
        let job = try await w.world.enqueue()
        #expect(job.items == Self.users)
        try await Eventually.wait("the validation of \(Self.users) signed-in accounts", while: w.worker) {
            try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)", as: Int.self) == Self.users
        }
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND outcome = 'valid'",
                                    as: Int.self) == Self.users)

        // The same codes again: each is sent once more, refused, never retried.
        w.sandbox.model.resetStats()
        var again: [Int64] = []
        for user in users { again.append(try await w.submit(user)) }
        let second = try await w.outcomes(again)
        #expect(second.values.filter { $0 == "code_rejected" }.count == Self.users, "\(Set(second.values))")
        #expect(w.tokenCalls == Self.users)
        #expect(w.sandbox.model.stats().errors["invalid_grant"] == Self.users)
        #expect(try await db.scalar("""
            SELECT count(*)::int FROM siwa.sign_ins WHERE id = ANY(\(again)) AND reason = 'invalid_grant' AND account_id IS NULL
            """, as: Int.self) == Self.users)
        #expect(try await db.scalar("""
            SELECT count(*)::int FROM siwa.job_items i JOIN siwa.sign_ins s ON (i.payload->>'sign_in_id')::bigint = s.id
            WHERE s.id = ANY(\(again)) AND i.attempt = 1 AND i.state = 'succeeded'
            """, as: Int.self) == Self.users)
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.accounts", as: Int.self) == Self.users)
        try await expectNoSecrets(w, users: users)
        await w.tearDown()
    }

    @Test(.timeLimit(.minutes(3)))
    func badIdentityTokensAreRejectedWithTheirReasonAndSpendNoCode() async throws {
        let w = try await SignInWorld.create()
        let good = try await w.authorize(["nonce": "right"])
        let audience = try await w.authorize(["nonce": "n", "aud": "com.example.elsewhere"])
        let expired = try await w.authorize(["nonce": "n", "iat": Int(Date().timeIntervalSince1970) - 1_000, "lifetime_seconds": 600])
        let kid = try #require(w.sandbox.publishedKIDs.first)
        let now = Int(Date().timeIntervalSince1970)
        let forged = Forge.token(header: #"{"alg":"HS256","kid":"\#(kid)"}"#, claims: """
            {"iss":"https://appleid.apple.com","aud":"\(SIWAWorld.clientID)","iat":\(now),"exp":\(now + 600),"sub":"000001.forged.0001",\
            "nonce":"\(Digest.sha256Hex("n"))"}
            """) { Forge.hmac(key: Array("secret".utf8), message: $0) }
        try w.sandbox.rotateKeys(publish: false)
        let unknownKID = try await w.authorize(["nonce": "n"])
        w.sandbox.model.resetStats()
        var ids: [Int64] = []
        ids.append(try await w.submit(good, nonce: "wrong"))
        ids.append(try await w.submit(audience))
        ids.append(try await w.submit(expired))
        ids.append(try await w.submit(good, token: forged))
        ids.append(try await w.submit(unknownKID))
        let outcomes = try await w.outcomes(ids)
        #expect(ids.map { outcomes[$0] ?? "none" } == [
            "identity_token_rejected: nonce_mismatch", "identity_token_rejected: wrong_audience",
            "identity_token_rejected: expired", "identity_token_rejected: alg_not_allowed",
            "identity_token_rejected: unknown_kid",
        ])
        #expect(w.tokenCalls == 0, "no code is spent on a token that does not verify")
        #expect(try await w.database.scalar("""
            SELECT count(*)::int FROM siwa.sign_ins WHERE id = ANY(\(ids)) AND authorization_code IS NULL AND identity_token IS NULL
            """, as: Int.self) == ids.count)

        // The good user's code is still unspent: by hand, with the right nonce, it signs in.
        let file = w.world.directory.appendingPathComponent("identity-token.jwt")
        try Data(good.token.utf8).write(to: file)
        // An empty token file is refused before anything is submitted, naming the flag and the file.
        let emptyFile = w.world.directory.appendingPathComponent("empty.jwt")
        try Data("\n".utf8).write(to: emptyFile)
        let empty = try await BinaryProcess.run(["sign-in", "--identity-token-file", emptyFile.path, "--code", good.code,
                                                  "--nonce", "right"], environment: w.world.environment)
        #expect(empty.status == 65, "\(empty.stdout) \(empty.stderr)")
        #expect(empty.stderr.contains("--identity-token-file '\(emptyFile.path)': empty"), "\(empty.stderr)")
        // The code from a file (kept out of the process list), a trailing newline trimmed.
        let codeFile = w.world.directory.appendingPathComponent("code.txt")
        try Data((good.code + "\n").utf8).write(to: codeFile)
        let byHand = try await BinaryProcess.run(["sign-in", "--identity-token-file", file.path, "--code-file", codeFile.path,
                                                   "--nonce", "right"], environment: w.world.environment)
        #expect(byHand.status == 0, "\(byHand.stdout) \(byHand.stderr)")
        #expect(byHand.stdout.contains("created account") && byHand.stdout.contains(good.sub), "\(byHand.stdout)")
        let replay = try await BinaryProcess.run(["sign-in", "--identity-token-file", file.path, "--code", good.code,
                                                   "--nonce", "right"], environment: w.world.environment)
        #expect(replay.status == 1 && replay.stdout.contains("code_rejected: invalid_grant"), "\(replay.stdout) \(replay.stderr)")
        #expect(w.tokenCalls == 2)
        await w.tearDown()
    }

    /// Nothing the app submitted and nothing Apple returned (codes, identity tokens, refresh
    /// tokens) reaches the worker's output, results, audit rows or the outcome view.
    func expectNoSecrets(_ w: SignInWorld, users: [SignInWorld.Authorized]) async throws {
        var text = w.worker.stdout + w.worker.stderr
        for table in ["siwa.results", "siwa.audit_log", "siwa.sign_in_outcomes", "siwa.account_summary"] {
            for row in try await w.database.pool.query(SQL(unsafeSQL: "SELECT t::text AS row FROM \(table) t")) {
                text += try row.decode("row", as: String.self) + "\n"
            }
        }
        #expect(!text.contains(".0.sbx."), "a sandbox code or token leaked")
        for user in users.prefix(20) {
            #expect(!text.contains(user.code) && !text.contains(user.token))
        }
    }
}
