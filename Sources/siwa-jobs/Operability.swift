import Clocks
import Commands
import Foundation
import Lifecycle
import Metrics
import MicroHTTP
import Queue
import SIWACore
import SIWAJobs

/// What the long-running commands add for operators: Prometheus metrics (`--metrics-port`, and
/// for `work` also `--metrics-file`) and systemd's notify protocol (`$NOTIFY_SOCKET`).
enum Operability {
    static let metricsPort = Declare.option("metrics-port", "N", .integer(in: 0...65535),
                                            help: "serve Prometheus metrics on GET /metrics at this port (0 picks a free one)")
    static let metricsHost = Declare.value("metrics-host", "ADDR", .string, default: "127.0.0.1",
                                           help: "IPv4 address the metrics port binds")
    static let metricsFile = Declare.option("metrics-file", "PATH", .string,
                                            help: "write Prometheus metrics to this file (atomically, for node_exporter's textfile "
                                                + "collector) every 15 s and at exit")
    static let serverOptions: [any OptionDeclaration] = [metricsPort, metricsHost]

    static let environment = [
        EnvironmentVariable("NOTIFY_SOCKET", "set by systemd for Type=notify units: READY=1, STATUS=, STOPPING=1 are sent there"),
        EnvironmentVariable("WATCHDOG_USEC", "set by systemd with WatchdogSec=: WATCHDOG=1 is sent every half of it"),
    ]

    /// The metrics server when `--metrics-port` is given, started (so a port in use fails now).
    /// - Throws: `ServiceUnavailable` (exit 69) when it cannot listen.
    static func metricsServer(_ arguments: ParsedArguments, context: CommandContext, logger: Logger,
                              render: @escaping @Sendable () async -> String) throws -> HTTPServer? {
        guard let port = arguments[metricsPort] else { return nil }
        let server = MetricsEndpoint.server(host: arguments[metricsHost], port: UInt16(port), clock: context.clock, render: render)
        do {
            let bound = try server.start()
            say("metrics on http://\(server.host):\(bound)/metrics")
            logger.info("metrics listening", ["http.port": "\(bound)"])
        } catch {
            throw ServiceUnavailable(what: "metrics (--metrics-port)", error: error)
        }
        return server
    }

    /// systemd notify for this process, when `NOTIFY_SOCKET` is set; create it once the process is ready.
    static func systemd(_ context: CommandContext, logger: Logger, status: @escaping @Sendable () -> String) -> SystemdNotifyService? {
        var environment: [String: String] = [:]
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { environment[name] = context.configuration.value(name) }
        guard let notifier = SystemdNotifier.from(environment: environment) else { return nil }
        logger.info("systemd notify", ["watchdog_s": notifier.watchdogInterval.map { "\($0.seconds)" } ?? "off"])
        return SystemdNotifyService(notifier: notifier, clock: context.clock, status: status) { failure in
            logger.warning("systemd notify: a datagram could not be sent", ["error": failure])
        }
    }
}

/// `work --metrics-file PATH`: written once at start (a path that cannot be written is a
/// configuration error before any work), every 15 s, and at exit.
struct MetricsFileWriter: Sendable {
    let path: String
    let metrics: WorkerMetrics

    /// - Throws: `ConfigurationError` naming `--metrics-file` when the file cannot be written.
    func write() async throws {
        let text = await metrics.render(previous: MetricsTextFile.read(path))
        do {
            try MetricsTextFile.write(text, to: path)
        } catch {
            throw ConfigurationError("\(error)", setting: "--metrics-file")
        }
    }

    /// Rewrites the file every 15 s until cancelled; failures are logged, not fatal.
    func loop(clock: any WallClock, logger: Logger) async {
        while !Task.isCancelled {
            do { try await clock.sleep(for: .seconds(15)) } catch { return }
            do { try await write() } catch { logger.warning("metrics file not written", ["error": "\(error)"]) }
        }
    }
}
