import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// Issue 8 §10, notifications through the real receiver, a real worker and PostgreSQL: odd boolean
/// shapes, `event_time` milliseconds, and a `kid` published only after the first attempt.
@Suite(.serialized, .timeLimit(.minutes(20))) struct NotificationProtocolTests {
    /// Values whose `Date(timeIntervalSince1970: ms / 1000)` formatted 1 ms early.
    static let lossyMilliseconds: [Int64] = [1_657_617_063_001, 1_657_617_063_007, 1_657_617_063_011]

    @Test func oddBooleansNeverRejectASignedDeletion() async throws {
        let world = try await NotificationWorld.create(accounts: 3)
        let subs = world.subs
        let flags: [NotificationSpec.PrivateEmailFlag] = [.json("1"), .string("yes"), .json("{\"a\":1}")]
        let specs = zip(subs, zip(flags, Self.lossyMilliseconds)).map { sub, pair in
            NotificationSpec(type: "account-delete", sub: sub, clientID: SIWAWorld.clientID, isPrivateEmail: pair.0,
                             eventTime: Double(pair.1) / 1000)
        }
        #expect(await world.post(try world.sign(specs)) == [200: 3])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 3)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")

        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT n.sub, n.outcome, n.verification, n.is_private_email,
                       (extract(epoch FROM n.event_time) * 1000)::bigint AS event_ms,
                       a.deleted_at IS NOT NULL AS deleted, a.refresh_token_ciphertext IS NULL AS wiped,
                       coalesce(r.detail->>'warnings', '') AS warnings
                FROM siwa.notifications n
                JOIN siwa.accounts a ON a.sub = n.sub
                JOIN siwa.results r ON (r.detail->>'notification_id')::bigint = n.id
                """)
        }
        #expect(rows.count == 3)
        for row in rows {
            let i = try #require(subs.firstIndex(of: try row.decode("sub", as: String.self)))
            #expect(try row.decode("outcome", as: String.self) == "applied", "notification \(i)")
            #expect(try row.decode("verification", as: String.self) == "verified")
            #expect(try row.decode("deleted", as: Bool.self) && row.decode("wiped", as: Bool.self), "account \(i) deleted")
            #expect(try row.decode("event_ms", as: Int64.self) == Self.lossyMilliseconds[i], "event_time of \(i) to the millisecond")
            let warnings: String = try row.decode("warnings")
            let privateEmail: Bool? = try row.decode("is_private_email", as: Bool?.self)
            switch i {
            case 0:
                #expect(privateEmail == true && warnings.isEmpty, "1 is true, silently")
            case 1:
                #expect(privateEmail == false)
                #expect(warnings == #"claim events is_private_email: the string "yes" is not a boolean; read as false"#, "\(warnings)")
            default:
                #expect(privateEmail == false && warnings.contains("an object is not a boolean; read as false"), "\(warnings)")
            }
        }
        let deletions: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts_to_delete")
        #expect(deletions == 3)
        await world.tearDown()
    }

    /// Apple may sign with a key before the JWKS serves it: the notification is retried, not
    /// rejected, and applied once the key is published (here after the first attempt).
    @Test func aKidPublishedAfterTheFirstAttemptIsApplied() async throws {
        let world = try await NotificationWorld.create(accounts: 1)
        let admin = world.admin
        let rotated = try await admin.post("/__sandbox/keys/rotate", ["publish": false])
        let kid = try #require(rotated["kid"] as? String)
        #expect((rotated["published"] as? [String])?.contains(kid) == false, "signs, not yet published")
        let payload = try world.sign([NotificationSpec(type: "account-delete", sub: world.subs[0], clientID: SIWAWorld.clientID)])
        #expect(await world.post(payload) == [200: 1])
        try await world.waitFor("SELECT count(*)::int FROM siwa.job_items", atLeast: 1)

        let worker = try BinaryProcess(["work", "--drain"], environment: world.environment(refetchSeconds: 1))
        // The first attempt found no such kid and scheduled a retry instead of rejecting it.
        try await world.waitFor("""
            SELECT count(*)::int FROM siwa.job_items
            WHERE attempt >= 1 AND state = 'available' AND last_error LIKE 'kid not yet published%'
            """, atLeast: 1)
        let unprocessed: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NULL")
        #expect(unprocessed == 1, "not final after one refetch")
        let published = try await admin.post("/__sandbox/keys/publish", [:])
        #expect((published["published"] as? [String])?.first == kid)
        let status = await worker.wait()
        #expect(status == 0, "\(worker.stderr.suffix(1500))")

        let outcome: String = try await world.database.scalar("SELECT outcome FROM siwa.notifications")
        let attempts: Int = try await world.database.scalar("SELECT attempt::int FROM siwa.job_items")
        #expect(outcome == "applied" && attempts >= 2, "\(outcome) after \(attempts) attempts")
        #expect(world.jwksFetches >= 2 && world.jwksFetches <= attempts, "at most one fetch per attempt: \(world.jwksFetches)")
        let deleted: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE deleted_at IS NOT NULL")
        #expect(deleted == 1)
        await world.tearDown()
    }
}
