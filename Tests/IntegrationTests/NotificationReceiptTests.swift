import Clocks
import Foundation
import Postgres
import Queue
import Sandbox
import SIWACrypto
import Testing
import TestSupport
@testable import SIWAJobs

/// What the real receiver accepts, and de-duplication a forged payload cannot abuse: real HTTP,
/// real PostgreSQL, real worker processes.
@Suite(.serialized, .timeLimit(.minutes(20))) struct NotificationReceiptTests {
    static let stored = #"200 {"status":"stored"}"#
    static let duplicate = #"200 {"status":"duplicate"}"#

    @Test func aForgedPayloadWithTheGenuineJTIDoesNotSuppressTheGenuineOne() async throws {
        let world = try await NotificationWorld.create(accounts: 1)
        let sub = world.subs[0], jti = "jti-\(UUID().uuidString)"
        let now = Int(Date().timeIntervalSince1970)
        // The same event signed three times (another iat each): all genuine, one jti.
        let genuine = try world.sign((0..<3).map {
            NotificationSpec(type: "account-delete", sub: sub, clientID: SIWAWorld.clientID, jti: jti, iat: now - $0)
        })
        let forged = genuine[0].split(separator: ".").prefix(2).joined(separator: ".") + ".AAAA"   // junk signature

        #expect(try await world.postPayload(forged) == Self.stored)
        #expect(try await world.postPayload(genuine[0]) == Self.stored, "the genuine payload is not suppressed")
        #expect(try await world.postPayload(genuine[0]) == Self.duplicate, "the same payload again is a duplicate")
        #expect(try await world.postPayload(forged) == Self.duplicate)
        #expect(try await world.postPayload(genuine[1]) == Self.stored)
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 3)
        // One drain processes all three together: the row trigger lets one verified payload per jti act.
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(run.status == 1, "the forged notification is an unverifiable item: \(run.stderr.suffix(1500))")

        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT outcome, verification, rejection_reason, rejection_detail, error FROM siwa.notifications ORDER BY id
                """)
        }
        let outcomes = try rows.map { try $0.decode("outcome", as: String.self) }
        #expect(outcomes.count == 3)
        #expect(outcomes.first == "unverifiable")
        #expect(try rows.first?.decode("rejection_reason", as: String?.self) == "malformed")
        #expect(try rows.first?.decode("rejection_detail", as: String?.self)?.hasPrefix("signature") == true)
        #expect(outcomes.dropFirst().sorted() == ["applied", "duplicate"], "\(outcomes)")
        try await expectDeletedOnce(world)

        // A later payload with that jti is caught before its effect is even proposed.
        #expect(try await world.postPayload(genuine[2]) == Self.stored)
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 4)
        let again = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(again.status == 0, "\(again.stderr.suffix(1500))")
        let last = try await world.database.pool.withConnection { conn in
            try await conn.query("SELECT outcome, error FROM siwa.notification_summary ORDER BY id DESC LIMIT 1")
        }
        #expect(try last.first?.decode("outcome", as: String.self) == "duplicate")
        #expect(try last.first?.decode("error", as: String?.self)?.contains("jti already processed") == true)
        let duplicates: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.audit_log WHERE action = 'notification.duplicate'")
        #expect(duplicates == 2, "each duplicate is audited")
        try await expectDeletedOnce(world)
        await world.tearDown()
    }

    /// The receiver's own server, in process: a `Service` that stores while it runs and returns
    /// after a graceful stop.
    @Test func theReceiversServerIsAServiceThatStoresAndStopsGracefully() async throws {
        let world = try await SIWAWorld.create()
        let receiver = NotificationReceiver(inbox: NotificationInbox(pool: world.database.pool),
                                            logger: Logger(label: "receiver", minimum: .error), path: "/apple")
        let server = receiver.server(host: "127.0.0.1", port: 0, threads: 1, clock: SystemClock())
        let port = try server.start()
        let running = Task { try await server.run() }
        let payload = try world.sandbox.signNotifications([
            NotificationSpec(type: "consent-revoked", sub: "s1", clientID: SIWAWorld.clientID),
        ])[0]
        let body = Array(try JSONSerialization.data(withJSONObject: ["payload": payload]))
        let stored = try await RawHTTP.send(port: port, method: "POST", path: "/apple",
                                            headers: [("Content-Type", "application/json")], body: body)
        #expect("\(stored.status) \(stored.text)" == Self.stored)
        #expect(try await RawHTTP.send(port: port, method: "GET", path: "/readyz").status == 200)
        server.shutdownGracefully()
        try await running.value
        #expect(server.port == 0)
        let rows: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications")
        #expect(rows == 1)
        await world.tearDown()
    }

    private func expectDeletedOnce(_ world: NotificationWorld) async throws {
        let toDelete: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts_to_delete")
        let applied: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.audit_log WHERE action = 'notification.account-delete'")
        let deleted: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts WHERE deleted_at IS NOT NULL")
        #expect(toDelete == 1 && applied == 1 && deleted == 1, "deleted exactly once: \(toDelete) \(applied) \(deleted)")
    }

    @Test func onlyJSONPostsOfACompactJWSWithAJTIOnTheConfiguredPathAreStored() async throws {
        let world = try await NotificationWorld.create(accounts: 1, serveArguments: ["--path", "/apple/notifications"])
        let path = "apple/notifications"
        let signed = try world.sign((0..<3).map { _ in
            NotificationSpec(type: "email-disabled", sub: world.subs[0], clientID: SIWAWorld.clientID)
        })
        func body(_ payload: String) throws -> [UInt8] {
            Array(try JSONSerialization.data(withJSONObject: ["payload": payload]))
        }
        let noJTI = Base64URL.encode(Array(#"{"alg":"RS256","kid":"k"}"#.utf8)) + "."
            + Base64URL.encode(Array(#"{"iss":"https://appleid.apple.com","events":"{}"}"#.utf8)) + ".c2ln"
        let headerNotJSON = "bm90IGpzb24." + signed[0].split(separator: ".")[1] + ".c2ln"
        for (payload, why) in [("hello", "one segment"), ("a.b.c", "segments are not JSON"), (noJTI, "no jti"),
                               (headerNotJSON, "header is not JSON"), ("hello", "again")] {
            let answer = try await world.request("POST", path: path, body: try body(payload))
            #expect(answer.status == 400 && answer.body.contains("invalid_payload"), "\(why): \(answer)")
        }
        #expect(try await world.request("POST", path: path, contentType: "text/plain", body: try body(signed[0])).status == 415)
        #expect(try await world.request("POST", path: path, contentType: nil, body: try body(signed[0])).status == 415)
        #expect(try await world.request("POST", body: try body(signed[0])).status == 404, "not the configured path")
        #expect(try await world.request("POST", path: path + "/x", body: try body(signed[0])).status == 404)
        #expect(try await world.request("GET", path: path).status == 405)
        #expect(try await world.answer("GET", path: "healthz") == #"200 {"status":"ok"}"#)
        #expect(try await world.answer("GET", path: "readyz") == #"200 {"status":"ready"}"#)
        for (i, type) in ["application/json; charset=utf-8", "Application/JSON"].enumerated() {
            let answer = try await world.answer("POST", path: path, contentType: type, body: try body(signed[i + 1]))
            #expect(answer == Self.stored, "\(type)")
        }
        let rows: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications")
        #expect(rows == 2, "nothing refused was stored")
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 2)
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(run.status == 0, "no refused body became a failed item: \(run.stderr.suffix(1500))")
        await world.tearDown()
        let log = world.receiver.stderr
        #expect(log.components(separatedBy: "notification refused: payload is not a compact JWS").count - 1 == 5, "\(log.suffix(3000))")
        #expect(log.components(separatedBy: "notification refused: content type is not JSON").count - 1 == 2)
        #expect(log.components(separatedBy: "notification refused: unknown path").count - 1 == 2)
        #expect(!log.contains("eyJ") && !log.contains("hello"), "no payload in the log")
    }

    @Test func staleEmailEventsAndRepeatedDeletionsAreRecordedOnce() async throws {
        let world = try await NotificationWorld.create(accounts: 2)
        let (mail, gone) = (world.subs[0], world.subs[1])
        let base = 1_700_000_000.0
        let first = try world.sign([
            NotificationSpec(type: "email-disabled", sub: mail, clientID: SIWAWorld.clientID, eventTime: base + 100),
            NotificationSpec(type: "account-delete", sub: gone, clientID: SIWAWorld.clientID),
            NotificationSpec(type: "account-delete", sub: gone, clientID: SIWAWorld.clientID),
        ])
        #expect(await world.post(first) == [200: 3])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 3)
        #expect(try await BinaryProcess.run(["work", "--drain"], environment: world.environment()).status == 0)
        // An older forwarding event arrives late.
        let late = try world.sign([NotificationSpec(type: "email-enabled", sub: mail, clientID: SIWAWorld.clientID, eventTime: base)])
        #expect(await world.post(late) == [200: 1])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 4)
        #expect(try await BinaryProcess.run(["work", "--drain"], environment: world.environment()).status == 0)

        let outcomes = try await world.database.pool.withConnection { conn in
            try await conn.query("SELECT event_type, outcome FROM siwa.notification_summary ORDER BY id")
        }.map { "\(try $0.decode("event_type", as: String.self))=\(try $0.decode("outcome", as: String.self))" }
        #expect(outcomes.prefix(3).sorted() == ["account-delete=applied", "account-delete=applied", "email-disabled=applied"])
        #expect(outcomes.last == "email-enabled=stale", "\(outcomes)")
        let forwarding: String = try await world.database.scalar("SELECT email_forwarding FROM siwa.accounts WHERE sub = \(mail)")
        #expect(forwarding == "disabled", "the newer event stands")
        let stale: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.audit_log WHERE action = 'notification.stale'")
        #expect(stale == 1)
        let toDelete: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts_to_delete")
        let deletions: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.account_deletions")
        #expect(toDelete == 1 && deletions == 1, "one deletion row per account")
        await world.tearDown()
    }

    /// Two completions racing for one jti in separate transactions (two workers): the second waits
    /// for the first to commit, then records `duplicate` instead of applying the effect again.
    @Test func concurrentCompletionsOfOneJTIApplyItOnce() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 1, revokedFraction: 0)
        let pool = world.database.pool
        let account: Int64 = try await world.database.scalar("SELECT id FROM siwa.accounts")
        let ids = try await pool.withConnection { conn in
            try await conn.query("""
                INSERT INTO siwa.notifications (payload, jti, payload_sha256)
                SELECT p, 'one-jti', sha256(convert_to(p, 'UTF8')) FROM unnest(ARRAY['a.b.c', 'a.b.d']) p
                RETURNING id
                """)
        }.map { try $0.decode("id", as: Int64.self) }
        func complete(_ id: Int64) -> SQL {
            """
            UPDATE siwa.notifications SET verification = 'verified', outcome = 'applied', event_type = 'account-delete',
                   account_ids = ARRAY[\(account)]::bigint[], processed_at = now()
            WHERE id = \(id)
            """
        }
        let first = try await PostgresConnection.connect(world.database.configuration)
        let second = try await PostgresConnection.connect(world.database.configuration)
        defer {
            first.close()
            second.close()
        }
        try await first.simpleQuery(unsafeSQL: "BEGIN")
        try await first.execute(complete(ids[0]))
        let racing = Task { try await second.execute(complete(ids[1])) }
        let waiting: SQL = """
            SELECT count(*)::int FROM pg_stat_activity WHERE pid = \(second.backendPID) AND wait_event_type = 'Lock'
            """
        try await Eventually.wait("the second completion to wait on the first's lock", timeout: .seconds(30)) {
            try await world.database.scalar(waiting, as: Int.self) > 0
        }
        #expect(try await world.database.scalar(waiting, as: Int.self) == 1, "the second completion waits for the first")
        try await first.simpleQuery(unsafeSQL: "COMMIT")
        _ = try await racing.value

        let outcomes = try await pool.withConnection { conn in
            try await conn.query("SELECT outcome FROM siwa.notifications ORDER BY id")
        }.map { try $0.decode("outcome", as: String.self) }
        #expect(outcomes == ["applied", "duplicate"])
        let deletions: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.account_deletions")
        let applied: Int = try await world.database.scalar(
            "SELECT count(*)::int FROM siwa.audit_log WHERE action = 'notification.account-delete'")
        #expect(deletions == 1 && applied == 1)
        await world.tearDown()
    }
}
