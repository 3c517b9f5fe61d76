import Foundation
import Postgres
import SIWAJobs
import Testing
import TestSupport

/// Issue #11 part 4 through the real binary: `work --drain --metrics-file` and `--metrics-port` on
/// the long-running worker and the receiver produce exposition text that `promtool check metrics`
/// accepts, with the measured values, and without any token, sub, email or fingerprint.
@Suite(.serialized) struct MetricsExpositionTests {
    /// Fails with promtool's words when it refuses `text`.
    static func expectPromtoolAccepts(_ text: String, _ what: String) async throws {
        let check = try await OpsTools.checkMetrics(text)
        #expect(check.status == 0, "promtool check metrics refused the \(what): \(check.output)\n\(text.prefix(3000))")
    }

    /// None of the seeded accounts' secrets or personal data appears in `text`.
    static func expectNoSecrets(_ text: String, world: SIWAWorld) {
        for token in world.seeded?.tokens ?? [] {
            #expect(!text.contains(token.token), "a refresh token appears")
            #expect(!text.contains(token.sub), "a sub appears")
        }
        #expect(!text.contains("sha256:") && !text.contains("hmac:"), "a fingerprint appears")
        #expect(!text.contains("@example.com") && !text.contains("privaterelay"), "an email appears")
        #expect(!text.contains(world.tokenKeyHex))
    }

    @Test func drainWritesATextfileThatPromtoolAccepts() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 30, revokedFraction: 0.1)
        _ = try await world.enqueue()
        let path = world.directory.appendingPathComponent("siwa-jobs.prom").path
        var env = world.environment
        env["SIWA_APPLE_RATE_LIMIT"] = "1000"
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "8", "--metrics-file", path], environment: env)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr.suffix(1500))")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try await Self.expectPromtoolAccepts(text, "textfile")
        #expect(text.contains(#"siwa_jobs_items_total{kind="refresh-validation",outcome="succeeded"} 30"#), "\(text)")
        #expect(text.contains(#"siwa_apple_calls_total{endpoint="token",status="200"} 27"#), "\(text)")
        #expect(text.contains(#"siwa_apple_calls_total{endpoint="token",status="400"} 3"#), "\(text)")
        #expect(text.contains(#"siwa_apple_call_duration_seconds_count{endpoint="token"} 30"#))
        #expect(text.contains(#"siwa_apple_call_duration_seconds_bucket{endpoint="token",le="+Inf"} 30"#))
        #expect(text.contains("siwa_jobs_items_in_flight 0"))
        #expect(text.contains("siwa_metrics_database_up 1"))
        #expect(text.contains(#"siwa_rate_budget_ceiling_rps{team_id="TEAMA12345",endpoint="/auth/token"} 1000"#), "\(text)")
        #expect(text.contains(#"siwa_jobs_last_success_timestamp_seconds{kind="refresh-validation"} "#))
        Self.expectNoSecrets(text, world: world)

        // A later drain with nothing to do rewrites the file, keeping the kind's last success for the alert.
        let lastSuccess = text.split(separator: "\n").first { $0.hasPrefix("siwa_jobs_last_success_timestamp_seconds{") }
        let again = try await BinaryProcess.run(["work", "--drain", "--metrics-file", path], environment: world.environment)
        #expect(again.status == 0, "\(again.stderr.suffix(800))")
        let second = try String(contentsOfFile: path, encoding: .utf8)
        try await Self.expectPromtoolAccepts(second, "second textfile")
        #expect(!second.contains("siwa_jobs_items_total{"), "the second run finished no item")
        #expect(lastSuccess.map { second.contains($0) } == true, "the last success was not carried over: \(second)")

        // A file that cannot be written is a configuration error before any work.
        let nowhere = world.directory.appendingPathComponent("missing/siwa-jobs.prom").path
        let refused = try await BinaryProcess.run(["work", "--drain", "--metrics-file", nowhere], environment: world.environment)
        #expect(refused.status == 78, "\(refused.stdout) \(refused.stderr.suffix(800))")
        #expect((refused.stdout + refused.stderr).contains("--metrics-file"), "\(refused.stdout) \(refused.stderr.suffix(800))")
        await world.tearDown()
    }

    @Test func workerAndReceiverServeMetricsThatPromtoolAccepts() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 10, revokedFraction: 0)
        // A job waits while no worker runs it: the gauges show its depth and the age of its oldest item.
        _ = try await world.enqueue()
        let worker = try BinaryProcess(["work", "--kinds", "noop", "--metrics-port", "0"], environment: world.environment)
        let receiver = try BinaryProcess(["notifications", "serve", "--port", "0", "--metrics-port", "0"], environment: world.environment)
        defer {   // only when a step above threw: both have exited otherwise
            for p in [worker, receiver] where p.process.isRunning { p.signal(SIGKILL) }
        }
        let workerPort = try await OpsTools.port(announcedBy: worker, prefix: "metrics on ")
        let scrape = try await OpsTools.get(port: workerPort, path: "/metrics")
        #expect(scrape.status == 200)
        #expect(scrape.header("content-type") == "text/plain; version=0.0.4; charset=utf-8")
        try await Self.expectPromtoolAccepts(scrape.text, "worker's /metrics")
        #expect(scrape.text.contains(#"siwa_queue_depth{kind="refresh-validation",priority="7"} 10"#), "\(scrape.text)")
        #expect(scrape.text.contains(#"siwa_queue_oldest_due_age_seconds{kind="refresh-validation"} "#))
        #expect(scrape.text.contains("siwa_jobs_items_in_flight 0"))
        Self.expectNoSecrets(scrape.text, world: world)
        #expect(try await OpsTools.get(port: workerPort, path: "/other").status == 404)

        let receiverPort = try await OpsTools.port(announcedBy: receiver, prefix: "metrics on ")
        let notificationsPort = try await OpsTools.port(announcedBy: receiver, prefix: "notifications listening on ")
        #expect(try await OpsTools.get(port: notificationsPort, path: "/nowhere").status == 404)
        let received = try await OpsTools.get(port: receiverPort, path: "/metrics")
        try await Self.expectPromtoolAccepts(received.text, "receiver's /metrics")
        #expect(received.text.contains(#"siwa_notifications_requests_total{status="404"} 1"#), "\(received.text)")

        worker.signal(SIGTERM)
        receiver.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(60)) == 0, "\(worker.stderr.suffix(800))")
        #expect(await receiver.wait(timeout: .seconds(60)) == 0, "\(receiver.stderr.suffix(800))")
        await world.tearDown()
    }
}
