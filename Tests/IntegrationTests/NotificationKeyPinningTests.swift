import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// Issue #13: notification keys are pinned to Apple. A sandbox (anything at SIWA_APPLE_BASE_URL)
/// signs whatever its admin API is asked to; its keys verify only in the explicit sandbox mode.
@Suite(.serialized) struct NotificationKeyPinningTests {
    @Test func aSandboxSignedAccountDeleteIsNotAppliedWithoutSandboxModeAndIsWithIt() async throws {
        let world = try await NotificationWorld.create(accounts: 1)
        let sub = world.subs[0]
        let payload = try world.sign([NotificationSpec(type: "account-delete", sub: sub, clientID: SIWAWorld.clientID)])
        #expect(await world.post(payload) == [200: 1])
        try await world.waitFor("SELECT count(*)::int FROM siwa.job_items", atLeast: 1)

        var pinned = world.environment(refetchSeconds: 1)
        pinned.removeValue(forKey: "SIWA_SANDBOX_MODE")
        let refused = try await BinaryProcess.run(["work", "--drain", "--drain-horizon-seconds", "0"], environment: pinned)
        #expect(refused.status != 0, "the notification cannot be verified, so the drain cannot succeed: \(refused.stdout)")
        #expect(world.jwksFetches == 0, "the sandbox's keys were fetched without sandbox mode")
        #expect(refused.stderr.contains("Apple's signed tokens are still verified with Apple's keys"), "\(refused.stderr.suffix(1500))")
        let deletedBefore: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE sub = \(sub) AND deleted_at IS NOT NULL
            """)
        let appliedBefore: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.notifications WHERE outcome = 'applied'")
        #expect(deletedBefore == 0 && appliedBefore == 0)

        // Due again at once, then with the explicit sandbox mode it verifies and applies.
        _ = try await world.database.pool.withConnection { conn in
            try await conn.query("UPDATE siwa.job_items SET run_at = now() WHERE state = 'available'")
        }
        let sandboxed = try await BinaryProcess.run(["work", "--drain"], environment: world.environment(refetchSeconds: 1))
        #expect(sandboxed.status == 0, "\(sandboxed.stdout) \(sandboxed.stderr.suffix(1500))")
        #expect(sandboxed.stderr.contains("SIWA_SANDBOX_MODE is set"), "the warning was logged: \(sandboxed.stderr.suffix(1500))")
        let deleted: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE sub = \(sub) AND deleted_at IS NOT NULL
            """)
        #expect(deleted == 1)
        await world.tearDown()
    }
}
