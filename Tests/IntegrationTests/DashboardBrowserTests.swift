import Foundation
import Postgres
import SIWAJobs
import Testing
import TestSupport

/// Issue #11 part 5 through the real binary and headless Chromium: every page of `siwa-jobs
/// dashboard` loads, shows its text and (the job page) its charts with the right values; an
/// `external_user_id` of `<script>…</script>` renders as text and never runs; no token, sub,
/// email, fingerprint or payload appears; the dashboard reads as a login that is only a member of
/// `siwa_dashboard`.
@Suite(.serialized) struct DashboardBrowserTests {
    static let hostile = "<script>document.title='pwned';document.body.innerHTML='pwned'</script>"

    /// (path, title) of every page, the job page added by the test.
    static let pages = [("/", "Jobs"), ("/tokens", "Token health"), ("/notifications", "Notifications inbox"),
                        ("/transfers", "Transfer windows"), ("/workers", "Workers and rate budget")]

    @Test func everyPageLoadsEscapedAndWithoutSecrets() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 30, revokedFraction: 0.2)
        let seeded = try #require(world.seeded)
        let revokedSub = try #require(seeded.tokens.first { $0.state == "revoked" }).sub
        try await world.database.pool.execute("UPDATE siwa.accounts SET external_user_id = \(Self.hostile) WHERE sub = \(revokedSub)")
        // A stored notification whose payload, sub and email must never be shown.
        try await world.database.pool.execute("""
            INSERT INTO siwa.notifications (payload, payload_sha256, jti, verification, event_type, sub, email, aud)
            VALUES ('eyJhbGciOiJSUzI1NiJ9.PAYLOADSECRET.c2ln', sha256('x'::bytea), 'jti-dashboard', 'verified', 'email-disabled',
                    'SUBSECRET.123', 'hidden@example.com', \(SIWAWorld.clientID))
            """)
        let job = try await world.enqueue()
        let drain = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8"], environment: world.environment)
        #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr.suffix(800))")

        let login = "dashboard_login_\(UInt32.random(in: 0...UInt32.max))"
        try await world.database.pool.execute(SQL(unsafeSQL: "CREATE ROLE \(login) LOGIN NOSUPERUSER IN ROLE siwa_dashboard"))
        var env = world.environment
        env["PGUSER"] = login
        let dashboard = try BinaryProcess(["dashboard", "--port", "0"], environment: env)
        defer { if dashboard.process.isRunning { dashboard.signal(SIGKILL) } }
        let port = try await OpsTools.port(announcedBy: dashboard, prefix: "dashboard on ")
        let profile = world.directory.appendingPathComponent("chromium-profile")

        var doms: [String: String] = [:]
        for (path, title) in Self.pages + [("/jobs/\(job.jobID)", "Job \(job.jobID)")] {
            let dom = try await OpsTools.dumpDOM("http://127.0.0.1:\(port)\(path)", profile: profile)
            #expect(dom.contains("<title>\(title) · siwa-jobs</title>"), "\(path): \(dom.prefix(600))")
            #expect(dom.contains("<h1>\(title)</h1>"), "\(path)")
            // Had the hostile id run, the title and the body would read "pwned".
            #expect(!dom.contains("<title>pwned") && !dom.contains("<body>pwned"), "\(path): the hostile user id ran")
            #expect(!dom.lowercased().contains("<script"), "\(path): a script element is in the DOM")
            doms[path] = dom
        }

        // The jobs page: the job, done, with its progress bar full.
        let jobs = try #require(doms["/"])
        #expect(jobs.contains("href=\"/jobs/\(job.jobID)\"") && jobs.contains("data-done=\"30\" data-total=\"30\""), "\(jobs)")
        // The job page: the outcome chart holds 24 valid and 6 invalid, the error chart 6 invalid_grant,
        // and the hostile id is shown as text.
        let page = try #require(doms["/jobs/\(job.jobID)"])
        #expect(page.contains("<svg id=\"outcomes\""))
        #expect(page.contains("data-label=\"valid\" data-value=\"24\""), "\(page)")
        #expect(page.contains("data-label=\"invalid\" data-value=\"6\""), "\(page)")
        #expect(page.contains("data-label=\"invalid_grant (HTTP 400)\" data-value=\"6\""), "\(page)")
        #expect(page.contains("&lt;script&gt;document.title='pwned';"), "the hostile id is not shown as text")
        // Token health: today's column for the client holds the 24 valid and 6 invalid verdicts.
        let tokens = try #require(doms["/tokens"])
        #expect(tokens.contains("data-series=\"valid\" data-value=\"24\"") && tokens.contains("data-series=\"invalid\" data-value=\"6\""),
                "\(tokens)")
        #expect(doms["/notifications"]?.contains("email-disabled") == true)

        for (path, dom) in doms {
            for token in seeded.tokens {
                #expect(!dom.contains(token.token), "\(path): a refresh token")
                #expect(!dom.contains(token.sub), "\(path): a sub")
            }
            for secret in ["sha256:", "hmac:", "@example.com", "privaterelay", "PAYLOADSECRET", "SUBSECRET", "jti-dashboard", world.tokenKeyHex] {
                #expect(!dom.contains(secret), "\(path) shows \(secret)")
            }
        }
        dashboard.signal(SIGTERM)
        #expect(await dashboard.wait(timeout: .seconds(30)) == 0, "\(dashboard.stderr.suffix(800))")
        try await world.database.pool.withConnection { conn in try await conn.simpleQuery(unsafeSQL: "DROP OWNED BY \(login); DROP ROLE \(login)") }
        await world.tearDown()
    }

    @Test func bearerTokenAndBindRules() async throws {
        let world = try await SIWAWorld.create()
        // Anything but loopback without a token is refused before binding.
        let open = try await BinaryProcess.run(["dashboard", "--port", "0", "--host", "0.0.0.0"], environment: world.environment)
        #expect(open.status == 78, "\(open.stdout) \(open.stderr)")
        #expect(open.stderr.contains("SIWA_DASHBOARD_TOKEN_FILE"), "\(open.stderr)")

        let tokenFile = world.directory.appendingPathComponent("dashboard.token")
        try Data("s3cret-dashboard-token\n".utf8).write(to: tokenFile)
        var env = world.environment
        env["SIWA_DASHBOARD_TOKEN_FILE"] = tokenFile.path
        let dashboard = try BinaryProcess(["dashboard", "--port", "0"], environment: env)
        defer { if dashboard.process.isRunning { dashboard.signal(SIGKILL) } }
        let port = try await OpsTools.port(announcedBy: dashboard, prefix: "dashboard on ")
        #expect(try await OpsTools.get(port: port, path: "/").status == 401)
        #expect(try await OpsTools.get(port: port, path: "/", headers: [("Authorization", "Bearer wrong")]).status == 401)
        let ok = try await OpsTools.get(port: port, path: "/", headers: [("Authorization", "Bearer s3cret-dashboard-token")])
        #expect(ok.status == 200)
        #expect(ok.header("content-security-policy")?.contains("default-src 'none'") == true)
        #expect(!ok.text.contains("s3cret-dashboard-token"))
        #expect(!dashboard.stdout.contains("s3cret") && !dashboard.stderr.contains("s3cret"))
        dashboard.signal(SIGTERM)
        #expect(await dashboard.wait(timeout: .seconds(30)) == 0)
        await world.tearDown()
    }
}
