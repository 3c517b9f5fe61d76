import Foundation
import Postgres
import Sandbox
import SIWACrypto
import Testing
@testable import SIWAJobs

/// Notifications end to end: signed by the sandbox, POSTed to the real receiver process, applied
/// by a real worker process against real PostgreSQL.
@Suite(.serialized, .timeLimit(.minutes(30))) struct NotificationApplyTests {
    static let base = 1_700_000_000

    @Test func eachEventTypeInEachEncodingIsApplied() async throws {
        let world = try await NotificationWorld.create(accounts: 32)
        let subs = world.subs
        try await world.database.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.accounts SET is_private_email = false, email_forwarding = 'disabled'")
        }
        // 4 types x events object/string x event_time s/ms x is_private_email bool/string.
        var specs: [NotificationSpec] = []
        for i in 0..<32 {
            let type = NotificationMix.types[i % 4]
            var spec = NotificationSpec(type: type, sub: subs[i],
                                        clientID: SIWAWorld.clientID,
                                        encoding: (i / 4) % 2 == 0 ? .string : .object,
                                        eventTimeUnit: (i / 8) % 2 == 0 ? .milliseconds : .seconds,
                                        eventTime: Double(Self.base + i))
            if type.hasPrefix("email-") {
                spec.email = "r\(i)@privaterelay.appleid.com"
                spec.isPrivateEmail = (i / 16) % 2 == 0 ? .string("true") : .bool(true)
            }
            if i == 3 { spec.type = "account-deleted" }   // Apple's documented spelling
            specs.append(spec)
        }
        let statuses = await world.post(try world.sign(specs))
        #expect(statuses == [200: 32])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 32)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")

        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT a.sub, a.email_forwarding, a.is_private_email, a.email, a.consent_revoked_at IS NOT NULL AS revoked,
                       a.deleted_at IS NOT NULL AS deleted, a.refresh_token_ciphertext IS NULL AS wiped,
                       a.refresh_token_fingerprint IS NOT NULL AS has_fp,
                       n.outcome, n.verification, n.event_type, extract(epoch FROM n.event_time)::bigint AS event_s,
                       (SELECT count(*) FROM siwa.account_deletions d WHERE d.account_id = a.id)::int AS deletions,
                       (SELECT count(*) FROM siwa.audit_log l WHERE l.account_id = a.id AND l.action LIKE 'notification.%')::int AS audits
                FROM siwa.accounts a JOIN siwa.notifications n ON n.sub = a.sub
                """)
        }
        #expect(rows.count == 32)
        for row in rows {
            let sub: String = try row.decode("sub")
            let i = try #require(subs.firstIndex(of: sub))
            let type: String = try row.decode("event_type")
            #expect(try row.decode("outcome", as: String.self) == "applied", "notification \(i)")
            #expect(try row.decode("verification", as: String.self) == "verified")
            #expect(type == NotificationMix.types[i % 4], "notification \(i): \(type)")
            #expect(try row.decode("event_s", as: Int.self) == Self.base + i, "event_time of notification \(i)")
            #expect(try row.decode("audits", as: Int.self) == 1)
            let wiped: Bool = try row.decode("wiped"), deleted: Bool = try row.decode("deleted")
            let revoked: Bool = try row.decode("revoked"), deletions: Int = try row.decode("deletions")
            let forwarding: String = try row.decode("email_forwarding")
            #expect(try row.decode("has_fp", as: Bool.self), "the fingerprint stays")
            switch type {
            case "email-disabled", "email-enabled":
                #expect(forwarding == (type == "email-disabled" ? "disabled" : "enabled"))
                #expect(try row.decode("is_private_email", as: Bool.self))
                #expect(try row.decode("email", as: String.self) == "r\(i)@privaterelay.appleid.com")
                #expect(!wiped && !deleted && !revoked && deletions == 0)
            case "consent-revoked":
                #expect(revoked && wiped && !deleted && deletions == 0)
            default:
                #expect(deleted && wiped && deletions == 1 && forwarding == "disabled")
            }
        }
        let toDelete: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts_to_delete")
        #expect(toDelete == 8)
        await world.tearDown()
    }

    @Test func duplicatesAndBadBodiesAreNeverProcessedTwice() async throws {
        let world = try await NotificationWorld.create(accounts: 2)
        let payload = try world.sign([NotificationSpec(type: "email-disabled", sub: world.subs[0], clientID: SIWAWorld.clientID)])
        #expect(await world.post(payload + payload + payload, concurrency: 3) == [200: 3])
        #expect(try await world.postRaw(Array("not json at all".utf8)) == 400)
        #expect(try await world.postRaw(Array(#"{"payload": 42}"#.utf8)) == 400)
        #expect(try await world.postRaw(Array(#"["payload"]"#.utf8)) == 400)
        #expect(try await world.postRaw([UInt8](repeating: 0x20, count: 100_000)) == 413)
        #expect(try await world.postRaw([], method: "GET") == 405)
        let rows: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications")
        #expect(rows == 1)
        try await world.waitFor("SELECT count(*)::int FROM siwa.job_items", atLeast: 1)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        let audits: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.audit_log WHERE action LIKE 'notification.%'")
        #expect(audits == 1)
        await world.tearDown()
        let refused = world.receiver.stderr.components(separatedBy: "notification refused").count - 1
        #expect(refused == 5, "each refused body is logged: \(world.receiver.stderr.suffix(2000))")
        #expect(world.receiver.stderr.contains("duplicate"))
    }

    @Test func aJWKSOutageDelaysProcessingButLosesNothing() async throws {
        let world = try await NotificationWorld.create(accounts: 1)
        try await world.admin.scriptFault("503", count: 1)
        let payload = try world.sign([NotificationSpec(type: "account-delete", sub: world.subs[0], clientID: SIWAWorld.clientID)])
        #expect(await world.post(payload) == [200: 1])
        try await world.waitFor("SELECT count(*)::int FROM siwa.job_items", atLeast: 1)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment(refetchSeconds: 1))
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        #expect(world.jwksFetches == 2, "the failed fetch, then one that worked")
        let outcome: String = try await world.database.scalar("SELECT outcome FROM siwa.notifications")
        let attempts: Int = try await world.database.scalar("SELECT attempt::int FROM siwa.job_items")
        #expect(outcome == "applied" && attempts == 2)
        let deletions: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts_to_delete")
        #expect(deletions == 1)
        await world.tearDown()
    }
}
