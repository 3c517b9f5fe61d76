import AppleID
import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// The documented roles are enough (sql/0003_roles.sql, 0009_roles_least_privilege.sql): LOGIN
/// roles that are only members of `siwa_worker`, `siwa_receiver` and `siwa_dashboard` (no
/// superuser, not the owner) run the worker, the receiver and the dashboard reads through the real
/// binary; the dashboard cannot read token columns.
@Suite(.serialized) struct RolesTests {
    /// The views the README documents for dashboards.
    static let dashboardViews = ["job_progress", "job_outcomes", "token_health", "transfer_status", "rate_budgets_status",
                                 "live_workers"]
    /// The views with personal data, read by `siwa_pii_reader` (sql/0020_hardening.sql), not the dashboard.
    static let personalViews = ["account_summary", "email_changes", "notification_summary", "accounts_to_delete",
                                "credential_states", "sign_in_outcomes"]

    /// A LOGIN role that is a member of `group` only, dropped by `dropLogins`.
    static func login(memberOf group: String, on db: TestDatabase) async throws -> String {
        let role = "\(group)_login_\(UInt32.random(in: 0...UInt32.max))"
        try await db.pool.execute(SQL(unsafeSQL: "CREATE ROLE \(role) LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE \(group)"))
        let rows = try await db.pool.query("""
            SELECT r.rolsuper AS superuser,
                   (SELECT count(*)::int FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = 'siwa' AND pg_has_role(\(role), c.relowner, 'USAGE')) AS owned
            FROM pg_roles r WHERE r.rolname = \(role)
            """)
        let row = try #require(rows.first)
        #expect(try row.decode("superuser", as: Bool.self) == false && row.decode("owned", as: Int.self) == 0,
                "\(role) must be neither superuser nor owner")
        return role
    }

    static func dropLogins(_ roles: [String], on db: TestDatabase) async {
        for role in roles { _ = try? await db.pool.execute(SQL(unsafeSQL: "DROP ROLE IF EXISTS \(role)")) }
    }

    /// `notifications serve` as `env` says, once it prints its URL.
    static func startReceiver(_ env: [String: String], arguments: [String] = []) async throws -> (BinaryProcess, String) {
        let receiver = try BinaryProcess(["notifications", "serve", "--port", "0"] + arguments, environment: env)
        for _ in 0..<500 where receiver.process.isRunning {
            if let line = receiver.stdout.split(separator: "\n").first(where: { $0.contains("listening on ") }),
               let url = line.components(separatedBy: "listening on ").last {
                return (receiver, url.trimmingCharacters(in: .whitespaces) + "/")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        receiver.signal(SIGTERM)
        _ = await receiver.wait()
        throw TestFailure("the receiver did not start: \(receiver.stderr.suffix(1500))")
    }

    @Test func theWorkerReceiverAndDashboardRunUnderTheirRoles() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 40, revokedFraction: 0.1)
        let db = world.database
        let worker = try await Self.login(memberOf: "siwa_worker", on: db)
        let receiverRole = try await Self.login(memberOf: "siwa_receiver", on: db)
        let dashboard = try await Self.login(memberOf: "siwa_dashboard", on: db)
        func env(_ role: String) -> [String: String] {
            var env = world.environment
            env["PGUSER"] = role
            env["SIWA_APPLE_RATE_LIMIT"] = "5000"   // the worker's rate budget runs under its role too
            return env
        }

        // The worker login: a refresh validation enqueued, drained and looked at.
        let enqueue = try await BinaryProcess.run(["enqueue", "refresh-validation"], environment: env(worker))
        #expect(enqueue.status == 0, "\(enqueue.stdout)\(enqueue.stderr)")
        let jobID: Int64 = try await db.scalar("SELECT max(id) FROM siwa.jobs WHERE kind = 'refresh-validation'")
        let validation = try await BinaryProcess.run(["work", "--drain"], environment: env(worker))
        #expect(validation.status == 0, "\(validation.stderr.suffix(2000))")
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        let progress = try await db.pool.query("SELECT valid, invalid, terminal FROM siwa.job_progress WHERE job_id = \(jobID)")
        let row = try #require(progress.first)
        #expect(try row.decode("terminal", as: Int.self) == 40)
        #expect(try row.decode("valid", as: Int.self) == truth.valid && row.decode("invalid", as: Int.self) == truth.revoked)
        let granted: Int = try await db.scalar("SELECT coalesce(sum(permits_granted), 0)::int FROM siwa.rate_budgets")
        #expect(granted >= 40, "the validation's calls took permits of the rate budget")
        let status = try await BinaryProcess.run(["status", "--job", "\(jobID)"], environment: env(worker))
        #expect(status.status == 0, "\(status.stdout)\(status.stderr)")

        // A sign-in exchanged under the worker login: a new account takes its id from the sequence.
        let device = try JSONSerialization.data(withJSONObject: ["team_id": SIWAWorld.teamID, "client_id": SIWAWorld.clientID, "nonce": "r1"])
        let user = try await SignInWorld.authorize(base: world.sandbox.baseURL, body: device, nonce: "r1",
                                                   transport: CurlTransport(maxConnectionsPerHost: 1, caBundlePath: world.sandbox.caFile))
        let signIn: Int64 = try await db.scalar("""
            SELECT siwa.submit_sign_in(\(SIWAWorld.teamID), \(SIWAWorld.clientID), \(user.token), \(user.code), p_nonce => 'r1')
            """)
        let exchange = try await BinaryProcess.run(["work", "--drain"], environment: env(worker))
        #expect(exchange.status == 0, "\(exchange.stderr.suffix(2000))")
        let signInOutcome: String = try await db.scalar("""
            SELECT concat_ws(' ', coalesce(outcome, 'none'), reason, detail) FROM siwa.sign_ins WHERE id = \(signIn)
            """)
        #expect(signInOutcome == "created", "\(exchange.stderr.suffix(2000))")

        // The receiver: a POST stored and planned under the receiver login.
        let (receiver, url) = try await Self.startReceiver(env(receiverRole))
        let sub = try #require(world.seeded?.tokens.first?.sub)
        let payload = try world.sandbox.signNotifications([NotificationSpec(type: "consent-revoked", sub: sub,
                                                                            clientID: SIWAWorld.clientID)])[0]
        let body = Array(try JSONSerialization.data(withJSONObject: ["payload": payload]))
        let response = try await CurlTransport(maxConnectionsPerHost: 1).send(HTTPRequest(
            method: "POST", url: url, headers: [("Content-Type", "application/json")], body: body, timeout: .seconds(30)))
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self)) \(receiver.stderr.suffix(1500))")
        var planned = 0
        for _ in 0..<1500 where planned == 0 {
            planned = try await db.scalar("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL")
            if planned == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(planned == 1, "the receiver's planner never planned the notification: \(receiver.stderr.suffix(1500))")
        receiver.signal(SIGTERM)
        #expect(await receiver.wait() == 0, "\(receiver.stderr.suffix(1500))")

        // The worker again: the notification drained under the worker login.
        let drain = try await BinaryProcess.run(["work", "--drain"], environment: env(worker))
        #expect(drain.status == 0, "\(drain.stderr.suffix(2000))")
        let outcome: String = try await db.scalar("SELECT coalesce(outcome, 'unprocessed') FROM siwa.notifications")
        #expect(outcome == "applied")

        // The dashboard: every documented view reads; token columns and writes are refused.
        let reader = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=\(db.name) user=\(dashboard)"))
        defer { reader.close() }
        for view in Self.dashboardViews {
            await #expect(throws: Never.self, "SELECT from siwa.\(view)") {
                try await reader.query(SQL(unsafeSQL: "SELECT * FROM siwa.\(view) LIMIT 5"))
            }
        }
        for statement in ["SELECT refresh_token_ciphertext FROM siwa.accounts LIMIT 1",
                          "UPDATE siwa.jobs SET state = 'cancelled'"] {
            do {
                try await reader.simpleQuery(unsafeSQL: statement)
                Issue.record("the dashboard role may run: \(statement)")
            } catch {
                #expect(error.meaning == .permission, "\(statement): \(error)")
            }
        }
        reader.close()
        await Self.dropLogins([worker, receiverRole, dashboard], on: db)
        await world.tearDown()
    }

    @Test func noRoleButTheOwnerReadsWhatItMustNotAndNobodyTruncatesTheAuditLog() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 5, revokedFraction: 0)
        let db = world.database
        let worker = try await Self.login(memberOf: "siwa_worker", on: db)
        let receiver = try await Self.login(memberOf: "siwa_receiver", on: db)
        let dashboard = try await Self.login(memberOf: "siwa_dashboard", on: db)
        let pii = try await Self.login(memberOf: "siwa_pii_reader", on: db)
        func refused(_ role: String, _ statement: String, because meaning: DatabaseFailureMeaning = .permission) async throws {
            let connection = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=\(db.name) user=\(role)"))
            defer { connection.close() }
            do {
                try await connection.simpleQuery(unsafeSQL: statement)
                Issue.record("\(role) may run: \(statement)")
            } catch {
                #expect(error.meaning == meaning, "\(role): \(statement): \(error)")
            }
        }
        try await refused(receiver, "SELECT refresh_token_ciphertext FROM siwa.accounts LIMIT 1")
        try await refused(receiver, "SELECT refresh_token_fingerprint FROM siwa.accounts LIMIT 1")
        for view in Self.personalViews { try await refused(dashboard, "SELECT * FROM siwa.\(view) LIMIT 1") }
        // Every column the dashboard role can read anywhere: none holds a sub, an email or a fingerprint.
        let readable = try await db.pool.query(SQL(unsafeSQL: """
            SELECT table_name || '.' || column_name AS col FROM information_schema.columns
            WHERE table_schema = 'siwa' AND has_column_privilege('\(dashboard)', 'siwa.' || quote_ident(table_name),
                                                                 column_name, 'SELECT')
            """)).map { try $0.decode("col", as: String.self) }
        #expect(!readable.isEmpty)
        let personal = readable.filter { $0.contains("email") || $0.hasSuffix(".sub") || $0.contains("_sub") || $0.contains("fingerprint") }
        #expect(personal.isEmpty, "the dashboard role reads \(personal)")
        let reader = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=\(db.name) user=\(pii)"))
        for view in Self.personalViews {
            await #expect(throws: Never.self, "siwa_pii_reader reads siwa.\(view)") {
                try await reader.query(SQL(unsafeSQL: "SELECT * FROM siwa.\(view) LIMIT 5"))
            }
        }
        reader.close()
        // TRUNCATE: refused to every role, and to the owner by the trigger.
        try await db.pool.execute("INSERT INTO siwa.audit_log (actor, action) VALUES ('test', 'test.kept')")
        for role in [worker, receiver, dashboard, pii] { try await refused(role, "TRUNCATE siwa.audit_log") }
        do {
            try await db.pool.execute("TRUNCATE siwa.audit_log")
            Issue.record("the owner truncated the audit log")
        } catch {
            #expect("\(error)".contains("siwa.audit_log is append-only"), "\(error)")
        }
        let audits: Int = try await db.scalar("SELECT count(*)::int FROM siwa.audit_log")
        #expect(audits >= 1)
        await Self.dropLogins([worker, receiver, dashboard, pii], on: db)
        await world.tearDown()
    }
}
