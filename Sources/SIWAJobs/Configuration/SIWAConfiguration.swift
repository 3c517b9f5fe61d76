import Clocks
import Foundation
import Postgres
import Queue
import SIWACore

/// Everything this process reads from the environment, read once at the edge: build it from the
/// environment dictionary in `main` and pass it (or what it resolves) down; nothing deeper reads
/// the environment. Secrets come from files or the environment, never from flags.
///
/// | variable | meaning |
/// |---|---|
/// | `DATABASE_URL` or `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD` | PostgreSQL, libpq conventions |
/// | `SIWA_APPLE_BASE_URL` | default `https://appleid.apple.com`; the sandbox's URL in tests and demos |
/// | `SIWA_TEAM_ID`, `SIWA_KEY_ID`, `SIWA_CLIENT_ID` | team ID, key ID (`kid`) and client ID |
/// | `SIWA_KEY_FILE` or `SIWA_PRIVATE_KEY` | the `.p8` key: a path, or the PEM itself (literal `\n` allowed) |
/// | `SIWA_TEAMS_FILE` | more teams, for transfers (`allCredentials()`) |
/// | `SIWA_APPLE_RATE_LIMIT` | default Apple rate ceiling per team, requests/s; 0 = unlimited (`appleRateCeilings()`) |
/// | `SIWA_TOKEN_KEY_FILE` or `SIWA_TOKEN_KEY` | 32-byte AES key (64 hex chars or base64) for refresh tokens at rest |
/// | `SIWA_TOKEN_KEY_ID` | id stored with each ciphertext; default `k1` |
/// | `SIWA_TOKEN_KEYS_PREVIOUS` | older keys for rotation: `id:key,id:key` |
/// | `SIWA_NOTIFICATION_CLIENT_IDS`, `SIWA_JWKS_REFETCH_SECONDS` | notification audiences; least JWKS refetch interval |
/// | `SIWA_LOG_LEVEL` | `debug`, `info` (default), `warning`, `error` |
/// | `SIWA_LOG_FORMAT` | `json` or `text`; default json unless stderr is a terminal |
///
/// Every resolving method throws `ConfigurationError` naming the variable (or flag) and what is
/// wrong; none puts a secret in its message.
public struct SIWAConfiguration: Sendable {
    /// The variables of the single-team configuration: any one of them set means the team is
    /// configured (and the rest must be too).
    public static let singleTeamVariables = ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE", "SIWA_PRIVATE_KEY"]

    private let environment: [String: String]
    /// `DATABASE_URL`, or libpq's own PG* defaults when it is unset.
    public let postgres: PostgresConfiguration
    /// `SIWA_APPLE_BASE_URL` as given (default `https://appleid.apple.com`); see `validatedAppleBaseURL()`.
    public let appleBaseURL: String

    /// - Parameter environment: the process environment (`ProcessInfo.processInfo.environment`), or
    ///   a test's dictionary.
    public init(environment: [String: String]) {
        self.environment = environment
        self.postgres = PostgresConfiguration.fromEnvironment(environment)
        self.appleBaseURL = environment["SIWA_APPLE_BASE_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "https://appleid.apple.com"
    }

    /// This configuration with the variable `name` set to `value` (a flag that overrides it).
    public func setting(_ name: String, to value: String) -> SIWAConfiguration {
        var environment = environment
        environment[name] = value
        return SIWAConfiguration(environment: environment)
    }

    /// The variable's value, trimmed; nil when unset or blank.
    public func value(_ name: String) -> String? {
        guard let v = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else { return nil }
        return v
    }

    /// The variable exactly as set (untrimmed), or nil.
    func rawValue(_ name: String) -> String? { environment[name] }

    /// `override` (a flag's value) if given, else the variable.
    /// - Throws: `ConfigurationError` `NAME is not set (or pass --flag)` when neither is there, or
    ///   naming the variable when `SIWA_TEAM_ID` or `SIWA_KEY_ID` is not 10 characters A-Z and 0-9.
    public func require(_ name: String, override: String? = nil, flag: String? = nil) throws(ConfigurationError) -> String {
        if let override { return override }
        if let v = value(name) {
            // A flag's value was checked by the parser (64); the environment's is checked here (78),
            // before any command writes a row for a team or key that cannot exist.
            if let what = Self.tenCharacterIDs[name] {
                return try IdentifierFormat.tenCharacterID(v, setting: name + (flag.map { " / --\($0)" } ?? ""), what: what)
            }
            return v
        }
        throw ConfigurationError("\(name) is not set" + (flag.map { " (or pass --\($0))" } ?? ""))
    }

    /// Variables holding an Apple 10-character ID, with the noun messages use.
    static let tenCharacterIDs = ["SIWA_TEAM_ID": "team ID", "SIWA_KEY_ID": "key ID"]

    /// True when any single-team variable is set (`singleTeamVariables`).
    public var hasSingleTeamCredentials: Bool {
        Self.singleTeamVariables.contains { value($0) != nil }
    }

    /// Who runs the command, for `created_by`: `USER`, else `cli`.
    public var operatorName: String { environment["USER"] ?? "cli" }

    /// - Throws: `ConfigurationError` when `DATABASE_URL` is neither a URI nor a conninfo string
    ///   (the message never echoes it: it may hold a password).
    public func validateDatabaseURL() throws(ConfigurationError) {
        guard postgres.isParseable else {
            throw ConfigurationError("DATABASE_URL is neither a postgres:// URI nor a key=value conninfo string")
        }
    }

    /// The Apple base URL, checked: an http(s) URL, and plain http only to a loopback address
    /// (`Loopback`: a parsed 127.0.0.0/8 or ::1 address, the sandbox), so client secrets and
    /// tokens never travel unencrypted.
    /// - Throws: `ConfigurationError` naming `SIWA_APPLE_BASE_URL`.
    public func validatedAppleBaseURL() throws(ConfigurationError) -> String {
        let url = appleBaseURL
        guard !url.contains("@") else {
            throw ConfigurationError("SIWA_APPLE_BASE_URL '\(Loopback.redactingUserInfo(url))' holds a user name or password: "
                + "give the base URL without them")
        }
        guard let parsed = URLComponents(string: url), (parsed.port ?? 443) >= 1, (parsed.port ?? 443) <= 65535,
              let (scheme, host) = Loopback.schemeAndHost(of: url), ["http", "https"].contains(scheme) else {
            throw ConfigurationError("SIWA_APPLE_BASE_URL '\(url.prefix(200))' is not an http(s) URL with a host and a port from 1 to 65535")
        }
        guard scheme == "https" || Loopback.isLoopback(host: host) else {
            throw ConfigurationError("SIWA_APPLE_BASE_URL '\(url)' is plain http to a host that is not a loopback address "
                + "(127.0.0.0/8 or [::1]; names such as localhost do not count); use https")
        }
        return url
    }

    /// Checks `SIWA_LOG_LEVEL` and `SIWA_LOG_FORMAT`; a typo is named rather than ignored.
    /// - Throws: `ConfigurationError` naming the variable and the accepted values.
    public func validateLogging() throws(ConfigurationError) {
        if let level = value("SIWA_LOG_LEVEL"), !["debug", "info", "warning", "warn", "error"].contains(level.lowercased()) {
            throw ConfigurationError("SIWA_LOG_LEVEL '\(level)' is not one of debug, info, warning, error")
        }
        if let format = value("SIWA_LOG_FORMAT"), !["json", "text"].contains(format.lowercased()) {
            throw ConfigurationError("SIWA_LOG_FORMAT '\(format)' is not json or text")
        }
    }

    /// A logger with the configured level (default info) and format (default: JSON lines unless
    /// stderr is a terminal). Unknown values fall back to the defaults; `validateLogging()` names them.
    /// - Parameter clock: the time stamped on each line.
    public func logger(_ label: String, clock: any WallClock) -> Logger {
        let level: Logger.Level = switch value("SIWA_LOG_LEVEL")?.lowercased() {
        case "debug": .debug
        case "warning", "warn": .warning
        case "error": .error
        default: .info
        }
        let json: Bool? = switch value("SIWA_LOG_FORMAT")?.lowercased() {
        case "json": true
        case "text": false
        default: nil
        }
        return Logger(label: label, minimum: level, json: json, clock: clock)
    }

    /// `SIWA_JWKS_REFETCH_SECONDS`: least time between two JWKS fetches (default 60 s, 0...3600 s).
    /// - Throws: `ConfigurationError` for a value that is not seconds in range.
    public func jwksRefetchInterval() throws(ConfigurationError) -> Duration {
        guard let text = value("SIWA_JWKS_REFETCH_SECONDS") else { return .seconds(60) }
        guard let seconds = Double(text), seconds.isFinite, (0...3600).contains(seconds) else {
            throw ConfigurationError("SIWA_JWKS_REFETCH_SECONDS: expected seconds from 0 to 3600, got '\(text)'")
        }
        return .seconds(seconds)
    }

    /// `primary` plus the comma-separated `SIWA_NOTIFICATION_CLIENT_IDS`, without duplicates.
    /// - Throws: `ConfigurationError` naming the variable and the entry that is not a client ID.
    public func notificationClientIDs(primary: String) throws(ConfigurationError) -> [String] {
        var ids = [primary]
        for id in (value("SIWA_NOTIFICATION_CLIENT_IDS") ?? "").split(separator: ",") {
            let trimmed = id.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            guard AppleIdentifier.isClientID(trimmed) else {
                throw ConfigurationError("SIWA_NOTIFICATION_CLIENT_IDS: '\(IdentifierFormat.printable(trimmed))' is not a client ID "
                    + "(App ID or Services ID: printable ASCII without spaces, e.g. com.example.web)")
            }
            if !ids.contains(trimmed) { ids.append(trimmed) }
        }
        return ids
    }
}
