import Foundation
import Postgres
import Sandbox
import SIWACrypto
import Testing
@testable import SIWAJobs

/// Bursts through the real receiver, key rotation mid-run, and a worker killed with SIGKILL.
@Suite(.serialized, .timeLimit(.minutes(30))) struct NotificationBurstTests {
    static func specs(_ range: Range<Int>, subs: [String]) -> [NotificationSpec] {
        range.map { i in
            var spec = NotificationSpec(type: NotificationMix.types[i % 4], sub: subs[i], clientID: SIWAWorld.clientID,
                                        encoding: (i / 4) % 2 == 0 ? .string : .object,
                                        eventTimeUnit: (i / 8) % 2 == 0 ? .milliseconds : .seconds)
            if i % 4 < 2 { spec.isPrivateEmail = i % 3 == 0 ? .bool(true) : .string("true") }
            return spec
        }
    }

    @Test func keyRotationMidRunCostsExactlyOneRefetch() async throws {
        let world = try await NotificationWorld.create(accounts: 200)
        let worker = try BinaryProcess(["work", "--concurrency", "8"], environment: world.environment(refetchSeconds: 0))
        let signedBeforeRotation = try world.sign(Self.specs(190..<200, subs: world.subs))
        let first = await world.post(try world.sign(Self.specs(0..<100, subs: world.subs)))
        #expect(first == [200: 100], "answers by status (0: transport error): \(first)")
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL", atLeast: 100)
        #expect(world.jwksFetches == 1)

        let oldKID = try #require(world.sandbox.publishedKIDs.first)
        let newKID = try world.sandbox.rotateKeys()
        #expect(world.sandbox.publishedKIDs == [newKID, oldKID], "the old key stays published until retired")
        let afterRotation = try world.sign(Self.specs(100..<190, subs: world.subs))
        let second = await world.post(afterRotation + signedBeforeRotation)
        #expect(second == [200: 100], "answers by status (0: transport error): \(second)")
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL", atLeast: 200)
        worker.signal(SIGTERM)
        #expect(await worker.wait() == 0, "\(worker.stderr.suffix(1500))")

        #expect(world.jwksFetches == 2, "verification continued after exactly one refetch")
        let applied: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications WHERE outcome = 'applied'")
        #expect(applied == 200)
        #expect(world.sandbox.retireKeys() == [oldKID])
        await world.tearDown()
    }

    @Test func burstOf1000WithTheWorkerKilledMidwayAppliesEachExactlyOnce() async throws {
        let world = try await NotificationWorld.create(accounts: 1000)
        let env = world.environment(refetchSeconds: 0)
        let first = try BinaryProcess(["work", "--concurrency", "16", "--lease-seconds", "2"], environment: env)
        #expect(await world.post(try world.sign(Self.specs(0..<500, subs: world.subs)), concurrency: 16) == [200: 500])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL", atLeast: 500)

        // The second half is signed with a new key; the worker's refetch for it stalls, so its
        // claimed items sit leased when the worker is killed.
        _ = try await world.admin
            .post("/__sandbox/faults", ["next": 1, "kind": "stall", "stall_seconds": 60])
        try world.sandbox.rotateKeys()
        #expect(await world.post(try world.sign(Self.specs(500..<1000, subs: world.subs)), concurrency: 16) == [200: 500])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications", atLeast: 1000)
        try await Eventually.wait("the worker's stalled JWKS refetch", while: first, timeout: .seconds(30)) {
            world.sandbox.model.stats().faults["stall"] != nil
        }
        try await world.waitFor("SELECT COALESCE(sum(running), 0)::int FROM siwa.job_progress", atLeast: 1)
        first.signal(SIGKILL)
        _ = await first.wait()
        #expect(try await world.processedCount() == 500, "killed mid-way")
        let leased: Int = try await world.database.scalar("SELECT COALESCE(sum(running), 0)::int FROM siwa.job_progress")
        #expect(leased > 0)

        let rerun = try BinaryProcess(["work", "--drain", "--concurrency", "16", "--lease-seconds", "2"], environment: env)
        #expect(await rerun.wait() == 0, "\(rerun.stderr.suffix(1500))")

        #expect(try await world.processedCount() == 1000, "none lost")
        let applied: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications WHERE outcome = 'applied'")
        let audits: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.audit_log WHERE action LIKE 'notification.%'
            """)
        let audited: Int = try await world.database.scalar("""
            SELECT count(DISTINCT detail->>'notification_id')::int FROM siwa.audit_log WHERE action LIKE 'notification.%'
            """)
        #expect(applied == 1000 && audits == 1000 && audited == 1000, "each applied exactly once")
        let deletions: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.account_deletions")
        let deleted: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE deleted_at IS NOT NULL")
        let revoked: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE consent_revoked_at IS NOT NULL AND deleted_at IS NULL
            """)
        let disabled: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE email_forwarding = 'disabled' AND deleted_at IS NULL
            """)
        let wiped: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE refresh_token_ciphertext IS NULL")
        #expect(deletions == 250 && deleted == 250 && revoked == 250 && disabled == 250 && wiped == 500)
        let items: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE state = 'succeeded'")
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results")
        let redone: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.job_items WHERE attempt > 1")
        #expect(items == 1000 && results == 1000)
        #expect(redone >= leased, "the killed worker's items were redone by the rerun")

        // Secret scan: no refresh token, no JWT (notification or client secret) anywhere visible.
        let haystack = try await world.haystack(extra: [first, rerun])
        #expect(world.holdsNoRefreshToken(haystack), "a refresh token leaked")
        #expect(!haystack.contains("eyJ"), "a JWT leaked")
        #expect(!haystack.contains(world.world.tokenKeyHex))
        await world.tearDown()
    }
}
