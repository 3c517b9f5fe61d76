import Clocks
import Commands
import Foundation
import Lifecycle
import Postgres
import Queue
import SIWAJobs
import Synchronization

/// What `work` and `notifications serve` add beside their main service: the heartbeat into the
/// worker registry (`siwa-jobs workers`), and for `work` the LISTEN loop that wakes the worker.
enum Registration {
    static let heartbeatSeconds = Declare.option(
        "heartbeat-seconds", "S", .seconds(in: 0.1...3600), help: "time between two heartbeats into the worker registry",
        environment: ["SIWA_HEARTBEAT_SECONDS"], defaultText: "10")
    static let heartbeatTimeout = Declare.option(
        "heartbeat-timeout-seconds", "S", .seconds(in: 1...86400),
        help: "a worker silent this long is no longer listed, and its row is deleted (at least 2 x the heartbeat)",
        environment: ["SIWA_HEARTBEAT_TIMEOUT_SECONDS"], defaultText: "60")
    static let options: [any OptionDeclaration] = [heartbeatSeconds, heartbeatTimeout]

    static let environment = [
        EnvironmentVariable("SIWA_HEARTBEAT_SECONDS", "default of --heartbeat-seconds (10)"),
        EnvironmentVariable("SIWA_HEARTBEAT_TIMEOUT_SECONDS", "default of --heartbeat-timeout-seconds (60)"),
    ]
    static let listenEnvironment = [
        EnvironmentVariable("SIWA_LISTEN", "auto (default: LISTEN when notifications can arrive, else poll), on (also "
            + "through a pooler in session mode) or off (poll only: PgBouncer in transaction mode)"),
        EnvironmentVariable("SIWA_LISTEN_DATABASE_URL", "where LISTEN connects, e.g. PostgreSQL directly while "
            + "DATABASE_URL goes through PgBouncer (default: the worker's database settings)"),
    ]

    /// A process id for the registry: host:pid:random (as `work`'s lease owner id).
    static func processID() -> String {
        "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The heartbeat settings: the flags, else the environment.
    /// - Throws: `ConfigurationError` for values out of range.
    static func heartbeatSettings(_ arguments: ParsedArguments, _ context: CommandContext) throws -> HeartbeatConfiguration {
        try context.configuration.heartbeat(interval: arguments[heartbeatSeconds], timeout: arguments[heartbeatTimeout])
    }

    /// What a worker holds at a heartbeat: its leased items, and the Apple requests per second
    /// it sent since the previous heartbeat (`calls`; nil at the first heartbeat).
    static func load(of worker: Worker, calls: AppleCallMetrics, clock: any WallClock) -> WorkerLoadSource {
        let previous = Mutex<(calls: Int, at: Date)?>(nil)
        return {
            let now = (calls: calls.totalCalls, at: clock.now)
            let rate = previous.withLock { last -> Double? in
                defer { last = now }
                guard let last, now.at > last.at else { return nil }
                return Double(now.calls - last.calls) / now.at.timeIntervalSince(last.at)
            }
            return WorkerLoad(inFlight: worker.itemsInFlight, appleRate: rate)
        }
    }

    /// `service` wrapped in a heartbeat: this process is in `siwa.workers` while `service` runs.
    static func heartbeat(around service: any Service, command: String, workerID: String, concurrency: Int, kinds: [String],
                          settings: HeartbeatConfiguration, pool: PostgresPool, context: CommandContext, logger: Logger,
                          load: @escaping WorkerLoadSource) -> HeartbeatService {
        let registration = WorkerRegistration(
            workerID: workerID, host: ProcessInfo.processInfo.hostName, pid: getpid(), version: Version.current,
            command: command, startedAt: context.clock.now, concurrency: concurrency, kinds: kinds.sorted())
        return HeartbeatService(store: WorkerRegistry(pool: pool), registration: registration, configuration: settings,
                                load: load, logger: logger, clock: context.clock, around: service)
    }

    /// The LISTEN loop that wakes `worker` on new jobs (`SIWA_LISTEN`, `SIWA_LISTEN_DATABASE_URL`);
    /// nil with `SIWA_LISTEN=off`. When notifications cannot arrive (PgBouncer in transaction
    /// mode) it logs why and ends, and the worker keeps polling every `pollInterval` (jittered).
    static func listener(waking worker: Worker, settings: ListenSettings, logger: Logger) -> (any Service)? {
        let poll = "\(worker.configuration.pollInterval.seconds)"
        guard settings.mode != .off else {
            logger.info("LISTEN off (SIWA_LISTEN=off): the worker polls for new work", ["poll_s": poll])
            return nil
        }
        let listener = PostgresListener(configuration: settings.postgres, channels: [Enqueuer.channel],
                                        options: settings.options)
        let database = settings.postgres.redactedDescription
        return LoopService(onStop: { listener.stop() }) {
            var announced = false
            for await notification in listener.notifications() {
                if notification.channel.isEmpty && !announced {
                    announced = true
                    logger.info("LISTEN established: new jobs wake the worker", ["database": database])
                }
                worker.wake()
            }
            if let reason = listener.unavailableReason {
                logger.warning("LISTEN unavailable: polling for new work (SIWA_LISTEN_DATABASE_URL: a direct connection wakes at once)", [
                    "reason": reason, "poll_s": poll, "database": database])
            }
        }
    }
}
