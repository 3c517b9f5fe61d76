import Foundation
import Postgres
import SIWACrypto
import Testing
@testable import SIWAJobs

/// `tokens rekey`: every token ends under the current key, beside a running validation, and a
/// token written meanwhile is never overwritten with the old one re-sealed.
@Suite(.serialized, .timeLimit(.minutes(20))) struct TokenRekeyTests {
    static let newKeyHex = Hex.encode(SecureRandom.bytes(32))

    static func keyring(_ world: SIWAWorld) throws -> TokenKeyring {
        TokenKeyring(current: try TokenCipher(keyID: "k2", encodedKey: newKeyHex),
                     previous: [try TokenCipher(keyID: "k1", encodedKey: world.tokenKeyHex)])
    }

    /// Each account's token, opened with `keyring`, by account id; also checks its keyed
    /// fingerprint (under `fingerprints`' fingerprint key, default `keyring`'s).
    static func tokens(_ world: SIWAWorld, keyring: TokenKeyring,
                       fingerprints: TokenKeyring? = nil) async throws -> [Int64: (token: String, keyID: String)] {
        let rows = try await world.database.pool.query("""
            SELECT id, refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint FROM siwa.accounts ORDER BY id
            """)
        var map: [Int64: (String, String)] = [:]
        for row in rows {
            let id: Int64 = try row.decode("id"), keyID: String = try row.decode("refresh_token_key_id")
            let token = try keyring.open(try row.decode("refresh_token_ciphertext"), keyID: keyID, accountAAD: String(id))
            #expect((fingerprints ?? keyring).fingerprint(token) == (try row.decode("refresh_token_fingerprint", as: String.self)),
                    "account \(id)")
            map[id] = (token, keyID)
        }
        return map
    }

    @Test func aTokenWrittenWhileItsBatchIsResealedIsKept() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 50, revokedFraction: 0)
        let keyring = try Self.keyring(world)
        let old = try world.keyring
        let original = try await Self.tokens(world, keyring: keyring, fingerprints: old)
        let pool = world.database.pool
        let written = SeenText()
        var rekey = TokenRekey(pool: pool, keyring: keyring, batchSize: 20)
        rekey.beforeWrite = { ids in
            // A concurrent writer (an older worker still on k1, a sign-in on k2) replaces two tokens of this batch.
            guard written.text.withLock({ $0.isEmpty }), ids.count >= 2 else { return }
            written.text.withLock { $0 = "\(ids[0]),\(ids[1])" }
            for (id, cipher) in [(ids[0], old), (ids[1], keyring)] {
                let token = "rnew-\(id)"
                let sealed = try cipher.seal(token, accountAAD: String(id))
                try await pool.execute("""
                    UPDATE siwa.accounts SET refresh_token_ciphertext = \(sealed.ciphertext), refresh_token_key_id = \(sealed.keyID),
                           refresh_token_fingerprint = \(cipher.fingerprint(token)) WHERE id = \(id)
                    """)
            }
        }
        let report = try await rekey.run()
        #expect(report.toRekey == 50 && report.remaining == 0 && report.unreadable == 0, "\(report)")
        #expect(report.changedMeanwhile == 2 && report.rekeyed == 49, "\(report)")   // 48 + the k1 one, next pass
        let after = try await Self.tokens(world, keyring: keyring)
        let changed = written.text.withLock { $0 }.split(separator: ",").compactMap { Int64($0) }
        #expect(changed.count == 2)
        for (id, value) in after {
            #expect(value.keyID == "k2", "account \(id)")
            #expect(value.token == (changed.contains(id) ? "rnew-\(id)" : original[id]?.token), "account \(id) kept its token")
        }
        await world.tearDown()
    }

    /// A row a worker holds locked (its completion statement) is skipped, not waited for: the
    /// rekey cannot deadlock with a running validation, and takes the row in a later pass.
    @Test func aRowHeldLockedIsSkippedAndTakenInALaterPass() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 50, revokedFraction: 0)
        let keyring = try Self.keyring(world)
        let original = try await Self.tokens(world, keyring: keyring, fingerprints: try world.keyring)
        let pool = world.database.pool
        let (locked, lockedSignal) = AsyncStream<Void>.makeStream()
        let (release, releaseSignal) = AsyncStream<Void>.makeStream()
        let held = SeenText()
        var rekey = TokenRekey(pool: pool, keyring: keyring, batchSize: 20)
        rekey.beforeWrite = { ids in
            let first = held.text.withLock { text -> Bool in
                guard text.isEmpty else { return false }
                text = String(ids[0])
                return true
            }
            guard first else { releaseSignal.yield(); return }   // the next batch: let the holder go
            let id = ids[0]
            Task {
                try await pool.transaction { connection in
                    try await connection.execute("SELECT id FROM siwa.accounts WHERE id = \(id) FOR UPDATE")
                    lockedSignal.yield()
                    // Held until the rekey writes its next batch (or 10 s, should it wait on this lock).
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { for await _ in release { return } }
                        group.addTask { try? await Task.sleep(for: .seconds(10)) }
                        await group.next()
                        group.cancelAll()
                    }
                }
            }
            for await _ in locked { break }
        }
        let report = try await rekey.run()
        #expect(report.busy >= 1, "the held row was skipped, not waited for: \(report)")
        #expect(report.rekeyed == 50 && report.remaining == 0 && report.changedMeanwhile == 0, "\(report)")
        let after = try await Self.tokens(world, keyring: keyring)
        let heldID = Int64(held.text.withLock { $0 })
        #expect(heldID != nil && after[heldID!]?.keyID == "k2", "the held row was taken in a later pass")
        for (id, value) in after {
            #expect(value.keyID == "k2" && value.token == original[id]?.token, "account \(id)")
        }
        await world.tearDown()
    }

    @Test func rekeyBesideARunningValidationLeavesNothingUnderTheOldKey() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(20))
        try await world.seed(accounts: 400, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        env["SIWA_TOKEN_KEY"] = Self.newKeyHex
        env["SIWA_TOKEN_KEY_ID"] = "k2"
        env["SIWA_TOKEN_KEYS_PREVIOUS"] = "k1:\(world.tokenKeyHex)"
        let doctorBefore = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(doctorBefore.stdout.contains("tokens per key id: k2 (current): 0; k1 (previous): 400, run 'siwa-jobs tokens rekey'"),
                "\(doctorBefore.stdout)")
        let worker = try BinaryProcess(["work", "--drain", "--concurrency", "8"], environment: env)
        try await Eventually.wait("the validation's first results", while: worker) {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)", as: Int.self) > 0
        }
        let rekey = try await BinaryProcess.run(["tokens", "rekey", "--batch-size", "25"], environment: env)
        let status = await worker.wait(timeout: .seconds(300))
        #expect(rekey.status == 0 && rekey.stdout.contains("rekeyed 400 of 400 tokens under key id k2; 0 left"), "\(rekey.stdout) \(rekey.stderr)")
        #expect(status == 0, "\(worker.stderr.suffix(1500))")
        let valid: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND outcome = 'valid'")
        #expect(valid == 400, "every token validated while it was re-sealed")
        let underOld: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_key_id = 'k1'")
        #expect(underOld == 0)
        let after = try await Self.tokens(world, keyring: try Self.keyring(world))
        let seeded = Set(world.seeded?.tokens.map(\.token) ?? [])
        #expect(after.count == 400 && Set(after.values.map(\.token)) == seeded, "nothing lost: every seeded token is stored, once")
        let doctor = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(doctor.stdout.contains("tokens per key id: k2 (current): 400; k1 (previous): 0, can be removed"), "\(doctor.stdout)")
        await world.tearDown()
    }
}
