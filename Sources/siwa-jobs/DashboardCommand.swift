import Commands
import Foundation
import Lifecycle
import Postgres
import SIWACore
import SIWAJobs

/// `siwa-jobs dashboard --port N`: the read-only web dashboard (README "Metrics, dashboard and
/// systemd"). Reads as the `siwa_dashboard` role only; binds 127.0.0.1 unless `--host` says
/// otherwise, and then only with a bearer token (`SIWA_DASHBOARD_TOKEN_FILE` or
/// `SIWA_DASHBOARD_TOKEN`, never a flag). SIGTERM/SIGINT stop it.
enum DashboardCommand: Command {
    static let port = Declare.option("port", "N", .integer(in: 0...65535), help: "TCP port to listen on (0 picks a free port)",
                                     required: true)
    static let host = Declare.value("host", "ADDR", .string, default: "127.0.0.1",
                                    help: "IPv4 address to bind; anything but loopback needs a bearer token")
    static let refresh = Declare.value("refresh-seconds", "S", .integer(in: 1...3600), default: 10, help: "pages reload themselves this often")
    static let poolSize = Declare.value("pool-size", "N", .integer(in: 1...16), default: 2, help: "PostgreSQL connections")

    static let spec = CommandSpec(
        "dashboard", abstract: "serve the read-only web dashboard (jobs, token health, inbox, transfers, workers)",
        discussion: "Pages read the PII-free views as the siwa_dashboard role in read-only transactions; the login "
            + "(DATABASE_URL / PG*) must be a member of siwa_dashboard.",
        options: [port, host, refresh, poolSize],
        environment: [EnvironmentDocs.database] + EnvironmentDocs.logging + [
            EnvironmentVariable("SIWA_DASHBOARD_TOKEN_FILE", "a file holding the bearer token required by every page"),
            EnvironmentVariable("SIWA_DASHBOARD_TOKEN", "the bearer token itself (the file wins)"),
        ] + Operability.environment)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let bindHost = arguments[host]
        let token = try bearerToken(context.configuration)
        if token == nil, !isLoopback(bindHost) {
            throw ConfigurationError("binding \(bindHost) needs a bearer token: set SIWA_DASHBOARD_TOKEN_FILE (or "
                                     + "SIWA_DASHBOARD_TOKEN), or bind 127.0.0.1", setting: "--host")
        }
        let logger = context.configuration.logger("dashboard", clock: context.clock)
        let pool = PostgresPool(configuration: context.configuration.postgres, size: arguments[poolSize])
        let reader = DashboardReader(pool: pool)
        let dashboard = Dashboard(reader: reader, bearerToken: token, refreshSeconds: arguments[refresh], logger: logger)
        let bindPort = try arguments.required(port)
        let server = dashboard.server(host: bindHost, port: UInt16(bindPort), clock: context.clock)
        let bound: UInt16
        do {
            try await reader.check()
            do { bound = try server.start() } catch { throw ServiceUnavailable(what: "dashboard", error: error) }
        } catch {
            await pool.close()
            throw error
        }
        say("dashboard on http://\(bindHost):\(bound)/")
        logger.info("dashboard started", ["http.port": "\(bound)", "bearer_token": token == nil ? "off" : "on"])
        var services: [any Service] = [server]
        if let notify = Operability.systemd(context, logger: logger, status: { "serving on \(bindHost):\(bound)" }) {
            services.append(notify)
        }
        _ = try await ServiceGroup(services: services, configuration: .init(
            gracePeriod: .seconds(10), clock: context.clock,
            onSignal: { signo in logger.info("signal received: stopping gracefully", ["signal": "\(signo)"]) })).run()
        await pool.close()
        logger.info("dashboard stopped")
        return .success
    }

    /// The token from `SIWA_DASHBOARD_TOKEN_FILE` (first line, trimmed) or `SIWA_DASHBOARD_TOKEN`; nil when neither is set.
    /// - Throws: `InputFileError` when the file cannot be read; `ConfigurationError` when it is empty.
    static func bearerToken(_ configuration: SIWAConfiguration) throws -> String? {
        var token = configuration.value("SIWA_DASHBOARD_TOKEN")
        if let path = configuration.value("SIWA_DASHBOARD_TOKEN_FILE") {
            let text = String(decoding: try InputFile.read(path, limit: 4096), as: UTF8.self)
            token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) }
            guard let token, !token.isEmpty else { throw ConfigurationError("the token file is empty", setting: "SIWA_DASHBOARD_TOKEN_FILE") }
        }
        return token
    }

    /// True for an IPv4 address in 127.0.0.0/8 (parsed, not a string prefix).
    static func isLoopback(_ host: String) -> Bool {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return false }
        return UInt32(bigEndian: address.s_addr) >> 24 == 127
    }
}
