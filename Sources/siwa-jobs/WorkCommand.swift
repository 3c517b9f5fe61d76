import AppleID
import Clocks
import Commands
import Foundation
import Lifecycle
import Postgres
import Queue
import SIWAJobs

/// `siwa-jobs work`: the worker process, on one `ServiceGroup`: the worker (with its heartbeat into
/// the worker registry), the LISTEN loop that wakes it, and (`--progress`) the progress line.
/// SIGTERM/SIGINT stop it gracefully.
enum WorkCommand: Command {
    private static let defaults = WorkerConfiguration(workerID: "")

    static let concurrency = Declare.value("concurrency", "N", .integer(in: 1...4096), default: defaults.concurrency,
                                           help: "most items in flight at once")
    static let claimBatch = Declare.value("claim-batch", "N", .integer(in: 1...5000), default: defaults.claimBatch,
                                          help: "most items claimed per round trip")
    static let flushMax = Declare.value("flush-max", "N", .integer(in: 1...5000), default: defaults.flushMaxItems,
                                        help: "completions are written in batches of at most this many")
    static let leaseSeconds = Declare.value("lease-seconds", "S", .seconds(in: 1...3600), default: defaults.lease,
                                            help: "lease length; renewed every third of it while items are in flight")
    static let graceSeconds = Declare.value("grace-seconds", "S", .seconds(in: 0...3600),
                                            default: defaults.shutdownGrace,
                                            help: "after SIGTERM/SIGINT, time in-flight items get before they are released")
    static let pollSeconds = Declare.value("poll-seconds", "S", .seconds(in: 0.05...60), default: defaults.pollInterval,
                                           help: "fallback poll interval (jittered ±50 %) when no NOTIFY arrives")
    static let drainHorizon = Declare.value("drain-horizon-seconds", "S", .seconds(in: 0...86400),
                                            default: defaults.drainHorizon,
                                            help: "with --drain, retries due within this time are waited for")
    static let retryBudget = Declare.value("retry-budget-seconds", "S", .seconds(in: 0...604_800), default: defaults.retryBudget,
                                           help: "a transient failure discards an item only after its max attempts AND this "
                                               + "long since its first attempt (0: max attempts alone)")
    static let maxUnflushed = Declare.option("max-unflushed", "N", .integer(in: 1...1_000_000),
                                             help: "backpressure: completions waiting to be written plus items in flight at "
                                                 + "which claiming pauses", defaultText: "max(2 x concurrency, concurrency + 1024)")
    static let kinds = Declare.option("kinds", "LIST", .string, help: "comma-separated job kinds to run (default: all)")
    static let workerID = Declare.option("worker-id", "ID", .string, help: "prefix of this process's lease owner id",
                                         defaultText: "the host name")
    static let poolSize = Declare.value("pool-size", "N", .integer(in: 2...64), default: 4, help: "PostgreSQL connections")
    static let drain = Declare.switch("drain", help: "exit when nothing is due (cron) instead of waiting for new jobs")
    static let progress = Declare.switch("progress", help: "each job's percentage, rate and ETA on stdout (JSON lines when not a terminal)")
    static let stats = Declare.switch("stats", help: "print CPU seconds and peak RSS at exit")
    static let caFile = Declare.option("ca-file", "FILE", .string,
                                       help: "PEM CA certificates trusted for HTTPS besides the system store",
                                       environment: ["SIWA_CA_FILE"])
    static let httpVersion = Declare.option("http-version", "V", .choice(HTTPVersion.allCases.map(\.rawValue)),
                                            help: "HTTP version toward Apple: 1.1 keep-alive or 2 multiplexed over TLS",
                                            environment: [SIWAConfiguration.httpVersionVariable],
                                            defaultText: HTTPVersion.default.rawValue)
    static let allowInsecureKeys = Declare.switch(
        "allow-insecure-key-permissions", help: "load key files that group or others may access (default: refuse them; "
            + "also SIWA_ALLOW_INSECURE_KEY_PERMISSIONS=1)")

    static let spec = CommandSpec(
        "work", abstract: "run the worker (--drain for cron)",
        discussion: "Exit 0 every item succeeded; 1 some failed permanently or were discarded; 75 database or Apple "
            + "unavailable, retries left beyond the drain horizon, or a drain stopped by a signal with work left; 78 a job "
            + "is paused for a configuration error, or work is due whose kind, or team and client, this worker has no "
            + "credentials for (left for a worker that has them).",
        options: [concurrency, claimBatch, flushMax, leaseSeconds, graceSeconds, pollSeconds, drainHorizon, retryBudget,
                  maxUnflushed, kinds, workerID, poolSize, drain, progress, stats, caFile, httpVersion, allowInsecureKeys]
                  + Registration.options
            + Operability.serverOptions + [Operability.metricsFile],
        environment: EnvironmentDocs.worker + Registration.environment + Registration.listenEnvironment + Operability.environment)

    static func run(_ arguments: ParsedArguments, _ given: CommandContext) async throws -> ExitCode {
        var settings = arguments[allowInsecureKeys] ? given.configuration.allowingInsecureKeyPermissions() : given.configuration
        if let file = arguments[caFile] { settings = settings.setting(SIWAConfiguration.caFileVariable, to: file) }
        if let version = arguments[httpVersion] { settings = settings.setting(SIWAConfiguration.httpVersionVariable, to: version) }
        let context = CommandContext(configuration: settings, clock: given.clock)
        var configuration = try workerConfiguration(arguments)
        let heartbeat = try Registration.heartbeatSettings(arguments, context)
        let listen = try context.configuration.listenSettings()
        let logger = context.configuration.logger("worker", clock: context.clock)
        let wiring = try await WorkerWiring.make(configuration: context.configuration, poolSize: arguments[poolSize],
                                                 logger: logger, clock: context.clock)
        // With --kinds the operator chose what runs here; otherwise due work of a disabled kind is reported.
        if arguments[kinds] == nil { configuration.unavailableKinds = wiring.unavailableKinds }
        // Items run on the thread that drives their requests (README "Cost per item").
        configuration.itemExecutor = wiring.transport.taskExecutor
        let handlers: [any JobHandler]
        do {
            handlers = try selectedHandlers(wiring.handlers, arguments)
        } catch {
            await wiring.close()
            throw error
        }
        // Jobs of teams this worker has no credentials for are left to a worker that has them.
        let worker = Worker(store: PostgresJobStore(pool: wiring.pool, scope: wiring.registry.jobScope), handlers: handlers, configuration: configuration,
                            logger: logger, clock: context.clock)
        var services: [any Service] = [Registration.heartbeat(
            around: WorkerService(worker: worker), command: "work", workerID: configuration.workerID,
            concurrency: configuration.concurrency, kinds: handlers.map(\.kind), settings: heartbeat, pool: wiring.pool,
            context: context, logger: logger, load: Registration.load(of: worker, calls: wiring.appleCalls, clock: context.clock))]
        if let listening = Registration.listener(waking: worker, settings: listen, logger: logger) { services.append(listening) }
        // A graceful stop ends every rate wait at once: those items are released, never sent.
        services.append(LoopService(onStop: { wiring.budgets.stop() }) {})
        let metrics = WorkerMetrics(worker: worker, apple: wiring.appleCalls, gauges: QueueGauges(pool: wiring.pool))
        let metricsFile = arguments[Operability.metricsFile].map { MetricsFileWriter(path: $0, metrics: metrics) }
        do {
            try await metricsFile?.write()
            if let server = try Operability.metricsServer(arguments, context: context, logger: logger,
                                                          render: { await metrics.render() }) { services.append(server) }
        } catch {
            await wiring.close()
            throw error
        }
        if let metricsFile {
            let clock = context.clock
            services.append(LoopService { await metricsFile.loop(clock: clock, logger: logger) })
        }
        let slots = configuration.concurrency
        if let notify = Operability.systemd(context, logger: logger, status: {
            let done = worker.acceptedByKind.values.reduce(0) { $0 + ($1[.succeeded] ?? 0) + ($1[.failed] ?? 0) + ($1[.discarded] ?? 0) }
            return "working: \(worker.itemsInFlight) items in flight (concurrency \(slots)), \(done) finished"
        }) { services.append(notify) }
        if arguments[progress] {
            let listing = JobListing(pool: wiring.pool)
            let clock = context.clock
            services.append(LoopService {
                await ProgressLine.run(read: { try await listing.activeAndRecent(recentSeconds: 10) }, clock: clock)
            })
        }
        let group = ServiceGroup(services: services, configuration: .init(
            gracePeriod: arguments[graceSeconds] + .seconds(30), clock: context.clock,
            onSignal: { signo in logger.info("signal received: stopping gracefully", ["signal": "\(signo)"]) }))

        let started = context.clock.now
        _ = try await group.run()
        let elapsed = context.clock.now.timeIntervalSince(started)
        if let metricsFile {
            do { try await metricsFile.write() } catch { logger.error("metrics file not written at exit", ["error": "\(error)"]) }
        }
        await wiring.close()
        guard let report = worker.lastReport else { throw CommandFailure("worker: stopped without a report") }
        // The closing log line: the worker's counts and the exit status decided here.
        logger.info("worker stopped", report.logFields.merging([
            "worker.id": configuration.workerID, "exit_code": "\(ExitCode.of(report).rawValue)"]) { $1 })
        printSummary(report, elapsed: elapsed, stats: arguments[stats], database: context.configuration.postgres.redactedDescription)
        if arguments[stats] { say("worker http: version=\(wiring.transport.policy.httpVersion) \(wiring.transport.statistics)") }
        return .of(report)
    }

    private static func printSummary(_ report: WorkerReport, elapsed: Double, stats: Bool, database: String) {
        say("worker: succeeded=\(report.succeeded) failed=\(report.failed) discarded=\(report.discarded) retried=\(report.retried) "
            + "released=\(report.released) unreached=\(report.unreached) unwritten=\(report.unwritten) "
            + "paused_jobs=\(report.pausedJobs.count) wall_s=\(String(format: "%.2f", elapsed)) exit=\(ExitCode.of(report).rawValue)")
        for (job, reason) in report.pausedJobs.sorted(by: { $0.key < $1.key }) {
            say("job \(job) paused: \(reason)")
        }
        for entry in report.unrunnable {
            say("job \(entry.job.id) (\(describe(entry.job))) has work due that this worker cannot run: \(entry.reason)")
        }
        if let failure = report.databaseFailure { say(ExitCode.workerDatabaseFailureLine(failure, database: database)) }
        if let failure = report.upstreamFailure { say("Apple unavailable, run stopped early (items left for the next run): \(failure)") }
        if let left = report.stoppedWithWorkLeft { say("stopped before the work was done (left for the next run): \(left)") }
        if report.unwritten > 0 {
            say("\(report.unwritten) completions could not be written: their leases expire and the items are redone by the next run")
        }
        if stats {
            let usage = ProcessUsage.current()
            say(String(format: "worker stats: cpu_user_s=%.2f cpu_sys_s=%.2f peak_rss_mb=%.1f",
                       usage.userSeconds, usage.systemSeconds, usage.peakRSSMegabytes))
        }
    }

    static func workerConfiguration(_ arguments: ParsedArguments) throws -> WorkerConfiguration {
        // A random suffix keeps ids unique even when an operator reuses --worker-id on two hosts.
        let suffix = "\(getpid()):\(UInt32.random(in: 0...UInt32.max))"
        var c = WorkerConfiguration(workerID: "\(arguments[workerID] ?? ProcessInfo.processInfo.hostName):\(suffix)")
        c.concurrency = arguments[concurrency]
        c.claimBatch = arguments[claimBatch]
        c.flushMaxItems = arguments[flushMax]
        c.lease = arguments[leaseSeconds]
        c.shutdownGrace = arguments[graceSeconds]
        c.pollInterval = arguments[pollSeconds]
        c.drainHorizon = arguments[drainHorizon]
        c.retryBudget = arguments[retryBudget]
        c.maxUnflushed = arguments[maxUnflushed] ?? 0
        c.drain = arguments[drain]
        return c
    }

    /// `kind, team T, client C`: the team and client from the job's spec, when it names them.
    private static func describe(_ job: JobRecord) -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(job.spec.utf8))) as? [String: Any]
        var parts = [job.kind]
        if let team = object?["team_id"] as? String { parts.append("team \(team)") }
        if let client = object?["client_id"] as? String { parts.append("client \(client)") }
        return parts.joined(separator: ", ")
    }

    /// `--kinds a,b`: only those handlers.
    /// - Throws: `UsageError` for an empty list or a kind this worker cannot run.
    private static func selectedHandlers(_ handlers: [any JobHandler], _ arguments: ParsedArguments) throws -> [any JobHandler] {
        guard let only = arguments[kinds] else { return handlers }
        let wanted = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        guard !wanted.isEmpty else {
            throw arguments.usageError("--kinds: expected a comma-separated list of kinds, got '\(IdentifierFormat.printable(only))'")
        }
        let known = Set(handlers.map(\.kind))
        if let unknown = wanted.subtracting(known).sorted().first {
            throw arguments.usageError("--kinds: '\(IdentifierFormat.printable(String(unknown)))' is not a kind this worker can run "
                + "(\(known.sorted().joined(separator: ", ")))")
        }
        return handlers.filter { wanted.contains($0.kind) }
    }
}
