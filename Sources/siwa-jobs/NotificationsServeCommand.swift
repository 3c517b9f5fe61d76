import Commands
import MicroHTTP
import Lifecycle
import Postgres
import SIWAJobs

/// `siwa-jobs notifications serve --port N`: Apple's server-to-server notification endpoint
/// (apple-api.md §8), on a `ServiceGroup`. Plain HTTP: terminate TLS 1.2+ in front of it and proxy
/// `POST` to it on `--path`. Stores each payload, answering 200 only after the row is committed
/// (503 when the database does not answer within `--db-timeout-seconds`), and plans processing
/// jobs for `siwa-jobs work`. Stops on SIGTERM/SIGINT within about 10 s plus
/// `--db-timeout-seconds`, even when the database is stuck (requests in flight are answered).
enum NotificationsServeCommand: Command {
    static let port = Declare.option("port", "N", .integer(in: 0...65535), help: "TCP port to listen on (0 picks a free port)",
                                     required: true)
    static let host = Declare.value("host", "ADDR", .string, default: "127.0.0.1", help: "IPv4 address to bind")
    static let path = Declare.value("path", "PATH", .custom("a URL path such as / or /apple/notifications") { text in
        text.hasPrefix("/") && !text.contains(where: { $0.isWhitespace || $0 == "?" || $0 == "#" }) ? text : nil
    }, default: "/", help: "the path Apple POSTs to (behind the proxy)")
    static let threads = Declare.value("threads", "N", .integer(in: 1...64), default: 2, help: "HTTP server threads")
    static let poolSize = Declare.value("pool-size", "N", .integer(in: 1...64), default: 4, help: "PostgreSQL connections for storing")
    private static let limits = NotificationReceiver.ConnectionLimits()
    static let maxConnections = Declare.value("max-connections", "N", .integer(in: 1...65536), default: limits.total,
                                              help: "connections served at once; more wait in the listen backlog")
    static let maxConnectionsPerIP = Declare.value("max-connections-per-ip", "N", .integer(in: 0...65536),
                                                   default: limits.perAddress,
                                                   help: "connections at once from one address (0: no limit; a proxy is one)")
    static let idleTimeout = Declare.value("idle-timeout-seconds", "S", .integer(in: 1...3600),
                                           default: Int(limits.idleTimeout.components.seconds),
                                           help: "a connection silent this long (idle, or a stalled request) is closed")
    static let requestDeadline = Declare.value("request-deadline-seconds", "S", .integer(in: 1...3600),
                                               default: Int(limits.requestDeadline.components.seconds),
                                               help: "a connection must deliver a whole request and be answered this soon "
                                                   + "after it opens or after its previous answer, or it is cut")
    static let databaseTimeout = Declare.value("db-timeout-seconds", "S", .seconds(in: 0.1...300), default: .seconds(10),
                                               help: "longest wait for the database per request before answering 503")

    static let spec = CommandSpec(
        "serve", abstract: "receive Apple's server-to-server notifications (plain HTTP; TLS in front)",
        discussion: "Each payload is stored before 200 is answered, and planned for processing by 'siwa-jobs work'. "
            + "GET /healthz answers while the process runs, GET /readyz when the database answers too.",
        options: [port, host, path, threads, poolSize, databaseTimeout, maxConnections, maxConnectionsPerIP, idleTimeout,
                  requestDeadline]
            + Registration.options + Operability.serverOptions,
        environment: [EnvironmentDocs.database] + EnvironmentDocs.logging + Registration.environment + Operability.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let bindPort = try arguments.required(port)
        let timeout = arguments[databaseTimeout].seconds
        let settings = context.configuration
        let heartbeat = try Registration.heartbeatSettings(arguments, context)
        let logger = settings.logger("notifications", clock: context.clock)
        // The planner (and the heartbeat) have their own pool, so requests waiting for the database never hold them up.
        let pool = PostgresPool(configuration: settings.postgres, size: arguments[poolSize])
        let planningPool = PostgresPool(configuration: settings.postgres, size: 1)
        func close() async {
            await pool.close()
            await planningPool.close()
        }
        let planner = NotificationPlanner(enqueuer: Enqueuer(pool: planningPool, clock: context.clock), logger: logger)
        let receiver = NotificationReceiver(inbox: NotificationInbox(pool: pool, timeoutSeconds: timeout), logger: logger,
                                            path: arguments[path], onStored: planner.signal)
        let limits = NotificationReceiver.ConnectionLimits(
            total: arguments[maxConnections], perAddress: arguments[maxConnectionsPerIP],
            idleTimeout: .seconds(arguments[idleTimeout]), requestDeadline: .seconds(arguments[requestDeadline]))
        let metrics = ReceiverMetrics()
        let server = receiver.server(host: arguments[host], port: UInt16(bindPort), threads: arguments[threads],
                                     limits: limits, clock: context.clock, observe: metrics.record(status:))
        let bound: UInt16
        let metricsServer: HTTPServer?
        do {
            try await SchemaPreflight.check(pool: planningPool, clock: context.clock)
            do { bound = try server.start() } catch { throw ServiceUnavailable(what: "notifications serve", error: error) }
            metricsServer = try Operability.metricsServer(arguments, context: context, logger: logger) {
                metrics.render(inFlight: server.inFlight)
            }
        } catch {
            server.stopNow()
            await close()
            throw error
        }
        say("notifications listening on http://\(server.host):\(bound)")
        logger.info("notification receiver started", ["http.port": "\(bound)"])

        let receiving = StopSequenceService(start: { Task { await planner.run() } }) { planning in
            // Owned by the stop sequence: the planning task is finished and awaited (bounded) here.
            await server.stop()
            logger.info("notification receiver stopped listening")
            planner.finish()
            // The planner's last round plans what was stored before the stop; a stuck database must
            // not hold the exit (rows left unplanned are planned by the next start or `enqueue notifications`).
            do {
                try await Deadline.run(seconds: timeout, waitingFor: "database") { await planning.value }
            } catch {
                logger.warning("planner did not finish; unplanned notifications wait for the next start", [
                    "error": String(describing: error),
                ])
            }
        }
        let registered = Registration.heartbeat(
            around: receiving, command: "notifications serve", workerID: Registration.processID(), concurrency: arguments[threads],
            kinds: [], settings: heartbeat, pool: planningPool, context: context, logger: logger,
            load: { WorkerLoad(inFlight: server.inFlight) })
        let listenHost = arguments[Self.host]
        let notify = Operability.systemd(context, logger: logger) {
            "receiving on \(listenHost):\(bound), \(server.inFlight) requests in flight"
        }
        let services: [any Service] = [registered] + [metricsServer as (any Service)?, notify].compactMap { $0 }
        _ = try await ServiceGroup(services: services, configuration: .init(
            gracePeriod: NotificationReceiver.gracePeriod + .seconds(timeout + 15), clock: context.clock,
            onSignal: { signo in logger.info("signal received: stopping gracefully", ["signal": "\(signo)"]) })).run()
        await close()
        logger.info("notification receiver stopped")
        return .success
    }
}
