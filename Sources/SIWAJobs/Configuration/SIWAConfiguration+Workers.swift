import Clocks
import Postgres
import SIWACore

/// `SIWA_LISTEN`: how a worker learns of new jobs besides its poll.
public enum ListenMode: String, Sendable, CaseIterable {
    /// LISTEN, after checking that notifications can arrive (no pooler in between, a test NOTIFY
    /// arrives); if not, the worker only polls. The default.
    case auto
    /// LISTEN through a pooler too (PgBouncer in session mode); the delivery check still runs.
    case on
    /// No LISTEN: the worker polls (`--poll-seconds`), e.g. behind PgBouncer in transaction mode.
    case off
}

/// Where and how a worker LISTENs for new jobs.
public struct ListenSettings: Sendable {
    public var mode: ListenMode
    /// `SIWA_LISTEN_DATABASE_URL` (e.g. PostgreSQL directly while the worker's pool goes through
    /// PgBouncer), else the worker's own database settings.
    public var postgres: PostgresConfiguration
    /// The checks the listener makes before it trusts LISTEN.
    public var options: PostgresListener.Options {
        PostgresListener.Options(refusesPoolers: mode != .on)
    }
}

extension SIWAConfiguration {
    /// `SIWA_LISTEN` (`auto`, the default; `on`; `off`) and `SIWA_LISTEN_DATABASE_URL`.
    /// - Throws: `ConfigurationError` naming the variable for an unknown mode or a URL libpq
    ///   cannot parse (never echoed: it may hold a password).
    public func listenSettings() throws(ConfigurationError) -> ListenSettings {
        let text = value("SIWA_LISTEN")?.lowercased() ?? ListenMode.auto.rawValue
        guard let mode = ListenMode(rawValue: text) else {
            throw ConfigurationError("SIWA_LISTEN '\(text)' is not one of auto, on, off")
        }
        guard let url = value("SIWA_LISTEN_DATABASE_URL") else { return ListenSettings(mode: mode, postgres: postgres) }
        let listen = PostgresConfiguration(conninfo: url)
        guard listen.isParseable else {
            throw ConfigurationError("SIWA_LISTEN_DATABASE_URL is neither a postgres:// URI nor a key=value conninfo string")
        }
        return ListenSettings(mode: mode, postgres: listen)
    }

    /// The heartbeat of the worker registry: `interval` and `timeout` (flags) when given, else
    /// `SIWA_HEARTBEAT_SECONDS` (0.1–3600, default 10) and `SIWA_HEARTBEAT_TIMEOUT_SECONDS`
    /// (1–86400, default 60).
    /// - Throws: `ConfigurationError` naming the variable for a value out of range, or when the
    ///   timeout is shorter than twice the interval (live workers would flicker out of the list).
    public func heartbeat(interval: Duration?, timeout: Duration?) throws(ConfigurationError) -> HeartbeatConfiguration {
        var configuration = HeartbeatConfiguration()
        if let interval {
            configuration.interval = interval
        } else if let fromEnvironment = try seconds("SIWA_HEARTBEAT_SECONDS", in: 0.1...3600) {
            configuration.interval = fromEnvironment
        }
        if let timeout {
            configuration.timeout = timeout
        } else if let fromEnvironment = try seconds("SIWA_HEARTBEAT_TIMEOUT_SECONDS", in: 1...86400) {
            configuration.timeout = fromEnvironment
        }
        guard configuration.timeout >= configuration.interval * 2 else {
            throw ConfigurationError("the heartbeat timeout (\(configuration.timeout.seconds) s) must be at least twice the "
                + "heartbeat interval (\(configuration.interval.seconds) s)",
                setting: "--heartbeat-timeout-seconds / SIWA_HEARTBEAT_TIMEOUT_SECONDS")
        }
        return configuration
    }

    private func seconds(_ name: String, in range: ClosedRange<Double>) throws(ConfigurationError) -> Duration? {
        guard let text = value(name) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, range.contains(seconds) else {
            throw ConfigurationError("\(name): expected seconds from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return .seconds(seconds)
    }
}
