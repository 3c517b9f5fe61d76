import AppleID
import Clocks
import Foundation
import Postgres
import Queue
import SIWAJobs

/// `siwa-jobs work`: the worker process.
enum WorkCommand {
    static let valueFlags: Set<String> = [
        "concurrency", "claim-batch", "lease-seconds", "grace-seconds", "poll-seconds", "drain-horizon-seconds",
        "kinds", "worker-id", "flush-max", "pool-size",
    ]

    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: valueFlags, switchFlags: ["drain", "progress", "stats"])
        try args.noPositionals("work")
        let configuration = try workerConfiguration(args)
        let logger = settings.logger("worker")

        let pool = PostgresPool(configuration: settings.postgres, size: try args.int("pool-size", in: 2...64) ?? 4)
        try await preflight(pool: pool)

        // SIWA_TEAMS_FILE first: a broken teams file is reported before any warning about the single team.
        let transfer = try TransferWiring.handlers(settings: settings, pool: pool)
        var handlers: [any JobHandler] = [NoopHandler()]
        if let refresh = try refreshHandler(settings: settings, pool: pool, logger: logger) { handlers.append(refresh.handler) }
        handlers += try notificationHandlers(settings: settings, pool: pool)
        handlers += transfer
        if let only = args.string("kinds") {
            let wanted = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            guard !wanted.isEmpty else { throw UsageError(message: "--kinds: expected a comma-separated list of kinds, got '\(only)'") }
            let known = Set(handlers.map(\.kind))
            if let unknown = wanted.subtracting(known).sorted().first {
                throw UsageError(message: "--kinds: '\(unknown)' is not a kind this worker can run (\(known.sorted().joined(separator: ", ")))")
            }
            handlers = handlers.filter { wanted.contains($0.kind) }
        }

        let worker = Worker(store: PostgresJobStore(pool: pool), handlers: handlers, configuration: configuration, logger: logger)
        let trap = SignalTrap { signo in
            logger.info("signal received: stopping gracefully", ["signal": "\(signo)"])
            worker.shutdownGracefully()
        }
        let listener = PostgresListener(configuration: settings.postgres, channels: [Enqueuer.channel])
        // Owned by this function: cancelled after the worker returns.
        let wakeups = Task {
            for await _ in listener.notifications() { worker.wake() }
        }
        let progress = args.flag("progress") ? Task { await ProgressLine.run(pool: pool) } : nil

        let started = Date()
        await worker.run()
        let report = worker.lastReport ?? WorkerReport()
        let elapsed = Date().timeIntervalSince(started)

        progress?.cancel()
        _ = await progress?.value
        listener.stop()
        wakeups.cancel()
        trap.cancel()
        await pool.close()

        say("worker: succeeded=\(report.succeeded) failed=\(report.failed) discarded=\(report.discarded) retried=\(report.retried) "
            + "released=\(report.released) paused_jobs=\(report.pausedJobs.count) wall_s=\(String(format: "%.2f", elapsed)) "
            + "exit=\(report.exitCode)")
        for (job, reason) in report.pausedJobs.sorted(by: { $0.key < $1.key }) {
            say("job \(job) paused: \(reason)")
        }
        if let failure = report.databaseFailure { say("database failure: \(failure)") }
        if let failure = report.upstreamFailure { say("Apple unavailable, run stopped early (items left for the next run): \(failure)") }
        if args.flag("stats") {
            let usage = ProcessUsage.current()
            say(String(format: "worker stats: cpu_user_s=%.2f cpu_sys_s=%.2f peak_rss_mb=%.1f",
                       usage.userSeconds, usage.systemSeconds, usage.peakRSSMegabytes))
        }
        return report.exitCode
    }

    static func workerConfiguration(_ args: Arguments) throws -> WorkerConfiguration {
        let host = ProcessInfo.processInfo.hostName
        if let given = args.string("worker-id"), given.trimmingCharacters(in: .whitespaces).isEmpty {
            throw UsageError(message: "--worker-id is empty")
        }
        // A random suffix keeps ids unique even when an operator reuses --worker-id on two hosts.
        let suffix = "\(getpid()):\(UInt32.random(in: 0...UInt32.max))"
        let id = args.string("worker-id").map { "\($0):\(suffix)" } ?? "\(host):\(suffix)"
        var c = WorkerConfiguration(workerID: id)
        c.concurrency = try args.int("concurrency", in: 1...4096) ?? c.concurrency
        c.claimBatch = try args.int("claim-batch", in: 1...5000) ?? c.claimBatch
        c.flushMaxItems = try args.int("flush-max", in: 1...5000) ?? c.flushMaxItems
        c.lease = try args.seconds("lease-seconds", in: 1...3600).map(Duration.seconds(fractional:)) ?? c.lease
        c.shutdownGrace = try args.seconds("grace-seconds", in: 0...3600).map(Duration.seconds(fractional:)) ?? c.shutdownGrace
        c.pollInterval = try args.seconds("poll-seconds", in: 0.05...60).map(Duration.seconds(fractional:)) ?? c.pollInterval
        c.drainHorizon = try args.seconds("drain-horizon-seconds", in: 0...86400).map(Duration.seconds(fractional:))
            ?? c.drainHorizon
        c.drain = args.flag("drain")
        return c
    }

    /// Fails fast with a clear message: database unreachable (75) or schema not migrated (78).
    static func preflight(pool: PostgresPool) async throws {
        // Read-only, so a connection dropped under it is simply retried a few times.
        var attempt = 0
        var status: Migrator.Status
        while true {
            do {
                status = try await pool.withConnection { conn in try await Migrator().status(on: conn) }
                break
            } catch let error as DatabaseError where error.isConnectionLoss && attempt < 3 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
        if !status.pending.isEmpty {
            throw ConfigError(message: "migrations not applied (\(status.pending.joined(separator: ", "))): run 'siwa-jobs migrate'")
        }
        if !status.changed.isEmpty {
            throw ConfigError(message: "applied migrations differ from this binary's (\(status.changed.joined(separator: ", "))): "
                + "the database and the binary disagree about the schema")
        }
    }

    /// The refresh-validation kind, when Apple credentials are configured. Partial configuration is an error.
    static func refreshHandler(settings: Settings, pool: PostgresPool, logger: Logger) throws -> (handler: RefreshValidationHandler, transport: CurlTransport)? {
        let names = ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE", "SIWA_PRIVATE_KEY"]
        guard names.contains(where: { settings.value($0) != nil }) else {
            logger.warning("refresh-validation disabled: no Apple credentials configured (SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_CLIENT_ID, SIWA_KEY_FILE)")
            return nil
        }
        let credentials = try settings.credentials()
        let keyring = try settings.keyring()
        let baseURL = try settings.validatedAppleBaseURL()
        let transport = CurlTransport()
        let client = AppleIDClient(baseURL: baseURL, transport: transport,
                                   secrets: ClientSecretProvider(credentials: credentials))
        let registry = AppleClientRegistry([(teamID: credentials.teamID, client: client)])
        return (RefreshValidationHandler(pool: pool, registry: registry, keyring: keyring), transport)
    }
}

/// A live progress line on stdout for `work --progress` (stderr carries the logs): items done of running jobs, and the rate.
enum ProgressLine {
    static func run(pool: PostgresPool) async {
        let started = Date()
        var firstDone: Int?
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard let rows = try? await pool.withConnection({ conn in
                try await conn.query("""
                    SELECT count(*) FILTER (WHERE i.state IN ('succeeded', 'failed', 'discarded', 'cancelled')) AS done,
                           count(*) AS total
                    FROM siwa.job_items i JOIN siwa.jobs j ON j.id = i.job_id
                    WHERE j.state IN ('running', 'paused') OR j.finished_at > now() - interval '10 seconds'
                    """)
            }), let row = rows.first, let done: Int = try? row.decode("done"), let total: Int = try? row.decode("total")
            else { continue }
            if firstDone == nil { firstDone = done }
            let elapsed = Date().timeIntervalSince(started)
            let rate = Double(done - (firstDone ?? 0)) / max(elapsed - 1, 0.001)
            let line = String(format: "\rprogress: %d/%d items done  %.0f items/s  %.0fs   ", done, total, rate, elapsed)
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
