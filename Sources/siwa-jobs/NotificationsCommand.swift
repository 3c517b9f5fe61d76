import Foundation
import MicroHTTP
import Postgres
import SIWAJobs

/// `siwa-jobs notifications serve|send`.
///
/// `serve --port N [--host 127.0.0.1] [--path /] [--threads 2] [--pool-size 4] [--db-timeout-seconds 10]`:
/// Apple's server-to-server notification endpoint (apple-api.md §8). Plain HTTP: terminate TLS
/// 1.2+ in front of it (a reverse proxy on the same host, or a load balancer, buffering request
/// bodies) and proxy `POST` to it on `--path`. Stores each payload, answering 200 only after the
/// row is committed (503 when the database does not answer within `--db-timeout-seconds`), and
/// plans processing jobs for `siwa-jobs work`. Stops on SIGTERM/SIGINT within about 10 s plus
/// `--db-timeout-seconds`, even when the database is stuck (requests in flight are answered).
///
/// `send --to URL --sandbox URL --client-id C (--sub S | --subs-file F) [--count N] [--concurrency N]`:
/// asks the sandbox to sign N notifications cycling through the four types and both encodings
/// (`NotificationMix`), about the given subs in turn, and POSTs them to URL.
enum NotificationsCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        switch words.first {
        case "serve": return try await serve(Array(words.dropFirst()), settings: settings)
        case "send": return try await send(Array(words.dropFirst()))
        default: throw UsageError(message: "notifications: expected 'serve' or 'send'")
        }
    }

    static func serve(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["port", "host", "path", "threads", "pool-size", "db-timeout-seconds"])
        try args.noPositionals("notifications serve")
        guard let port = try args.int("port", in: 0...65535) else {
            throw UsageError(message: "notifications serve: --port N is required (0 picks a free port)")
        }
        let path = args.string("path") ?? "/"
        guard path.hasPrefix("/"), !path.contains(where: { $0.isWhitespace || $0 == "?" || $0 == "#" }) else {
            throw UsageError(message: "--path: expected a URL path such as / or /apple/notifications, got '\(path)'")
        }
        let timeout = try args.seconds("db-timeout-seconds", in: 0.1...300) ?? 10
        let logger = settings.logger("notifications")
        // The receiver's connections carry a session statement_timeout, so the planner has its own.
        let pool = PostgresPool(configuration: settings.postgres, size: try args.int("pool-size", in: 1...64) ?? 4)
        let planningPool = PostgresPool(configuration: settings.postgres, size: 1)
        try await WorkCommand.preflight(pool: planningPool)
        let planner = NotificationPlanner(enqueuer: Enqueuer(pool: planningPool), logger: logger)
        let receiver = NotificationReceiver(inbox: NotificationInbox(pool: pool, timeoutSeconds: timeout), logger: logger,
                                            path: path, onStored: planner.signal)
        let server = receiver.server(host: args.string("host") ?? "127.0.0.1", port: UInt16(port),
                                     threads: try args.int("threads", in: 1...64) ?? 2)
        let bound: UInt16
        do {
            bound = try server.start()
        } catch {
            await pool.close()
            await planningPool.close()
            SIWAJobsCommand.fail("notifications serve: \(error)")
            return 69
        }
        let stop = AsyncStream<Int32>.makeStream()
        let trap = SignalTrap { signo in stop.continuation.yield(signo) }
        let planning = Task { await planner.run() }
        say("notifications listening on http://\(server.host):\(bound)")
        logger.info("notification receiver started", ["http.port": "\(bound)"])
        for await signo in stop.stream {
            logger.info("signal received: stopping gracefully", ["signal": "\(signo)"])
            break
        }
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
        trap.cancel()
        await pool.close()
        await planningPool.close()
        logger.info("notification receiver stopped")
        return 0
    }

    static func send(_ words: [String]) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["to", "sandbox", "client-id", "sub", "subs-file", "count", "concurrency"])
        try args.noPositionals("notifications send")
        guard let to = args.string("to") else { throw UsageError(message: "notifications send: --to URL is required") }
        guard let sandbox = args.string("sandbox") else { throw UsageError(message: "notifications send: --sandbox URL is required") }
        guard let clientID = args.string("client-id") else { throw UsageError(message: "notifications send: --client-id is required") }
        var subs: [String] = args.string("sub").map { [$0] } ?? []
        if let file = args.string("subs-file") {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw UsageError(message: "--subs-file: cannot read '\(file)'")
            }
            subs += String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        }
        guard !subs.isEmpty else { throw UsageError(message: "notifications send: give --sub S or --subs-file F") }
        let count = try args.int("count", in: 1...1_000_000) ?? subs.count
        let specs = (0..<count).map { NotificationMix.spec(index: $0, sub: subs[$0 % subs.count], clientID: clientID) }
        let admin = SandboxAdminClient(baseURL: sandbox)
        var payloads: [String] = []
        for start in stride(from: 0, to: specs.count, by: 1000) {
            payloads += try await admin.signNotifications(Array(specs[start..<min(start + 1000, specs.count)]))
        }
        let statuses = await NotificationSender(url: to).send(payloads, concurrency: try args.int("concurrency", in: 1...256) ?? 8)
        let summary = statuses.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        say("sent \(payloads.count) notifications: \(summary)")
        return statuses.keys.allSatisfy { (200..<300).contains($0) } ? 0 : 1
    }
}
