import CLibPQ

/// How to reach PostgreSQL, following libpq conventions.
///
/// `conninfo` is either a `postgres://` / `postgresql://` URI or a `key=value` connection string
/// (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING). An empty string lets
/// libpq read `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD` and friends by itself.
public struct PostgresConfiguration: Sendable {
    /// URI or key=value connection string; "" means "libpq environment defaults".
    public var conninfo: String
    /// `connect_timeout` in seconds, used unless `conninfo` sets its own. 0 or less: wait forever.
    public var connectTimeoutSeconds: Int
    /// `application_name` reported in `pg_stat_activity`, used unless `conninfo` sets its own.
    public var applicationName: String

    /// - Parameters:
    ///   - conninfo: URI or key=value string (default "": libpq reads the PG* variables).
    ///   - connectTimeoutSeconds: seconds to wait for a connection (default 10).
    ///   - applicationName: shown in `pg_stat_activity` (default "siwa-jobs").
    public init(conninfo: String = "", connectTimeoutSeconds: Int = 10, applicationName: String = "siwa-jobs") {
        self.conninfo = conninfo
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.applicationName = applicationName
    }

    /// `DATABASE_URL` if set and non-empty, else "" (libpq then reads the PG* variables itself).
    public static func fromEnvironment(_ env: [String: String]) -> PostgresConfiguration {
        PostgresConfiguration(conninfo: env["DATABASE_URL"] ?? "")
    }

    /// The connection settings as `key=value` pairs with any password replaced by `<redacted>`;
    /// safe to log. An unparseable conninfo is not echoed at all. An empty conninfo shows where
    /// the PG* variables point (host, port, user, database; `PQconndefaults`).
    public var redactedDescription: String {
        if conninfo.isEmpty { return Self.environmentDefaults() }
        guard let options = Self.parse(conninfo) else {
            return "(unparseable conninfo, \(conninfo.utf8.count) bytes)"
        }
        return options.map { key, value in
            key == "password" ? "password=<redacted>" : "\(key)=\(Self.quoted(value))"
        }.joined(separator: " ")
    }

    /// True when `conninfo` is empty (PG* variables) or parses as a libpq URI or key=value string.
    public var isParseable: Bool { conninfo.isEmpty || Self.parse(conninfo) != nil }

    /// Text that must never appear in messages: the password in `conninfo`, or the whole
    /// `conninfo` when libpq cannot parse it (its error would echo it, password and all).
    var secretsToRedact: [String] {
        guard !conninfo.isEmpty else { return [] }
        guard let options = Self.parse(conninfo) else { return [conninfo] }
        return options.filter { $0.key == "password" && !$0.value.isEmpty }.map(\.value)
    }

    /// Keyword/value pairs for `PQconnectdbParams` with `expand_dbname = 1`. Our defaults come
    /// first so that anything set in `conninfo` (expanded from `dbname`, last) overrides them;
    /// libpq skips empty values, so an empty `conninfo` leaves the PG* variables in charge.
    var connectParameters: [(String, String)] {
        var pairs: [(String, String)] = []
        if connectTimeoutSeconds > 0 { pairs.append(("connect_timeout", String(connectTimeoutSeconds))) }
        if !applicationName.isEmpty { pairs.append(("application_name", applicationName)) }
        // TCP keepalives so a silently vanished server is noticed in about a minute (ignored on
        // Unix-domain sockets); conninfo may override each.
        pairs.append(("keepalives_idle", "30"))
        pairs.append(("keepalives_interval", "10"))
        pairs.append(("keepalives_count", "3"))
        pairs.append(("dbname", conninfo))
        return pairs
    }

    /// `host=… port=… user=… dbname=…` as libpq would use them from the PG* variables and its
    /// built-in defaults (no password), or a note when libpq cannot say.
    private static func environmentDefaults() -> String {
        guard let options = PQconndefaults() else { return "(libpq defaults from the PG* environment variables)" }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            cursor += 1
        }
        let shown = ["host", "hostaddr", "port", "user", "dbname"].compactMap { key in
            values[key].flatMap { $0.isEmpty ? nil : "\(key)=\(quoted($0))" }
        }
        return shown.isEmpty ? "(libpq defaults from the PG* environment variables)" : shown.joined(separator: " ")
    }

    /// Parses a conninfo string with libpq itself; nil if libpq rejects it.
    static func parse(_ conninfo: String) -> [(key: String, value: String)]? {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            if let errorMessage { PQfreemem(errorMessage) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var result: [(key: String, value: String)] = []
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val {
                result.append((String(cString: keyword), String(cString: value)))
            }
            cursor += 1
        }
        return result
    }

    private static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains(where: { $0 == " " || $0 == "'" || $0 == "\\" })
        guard needsQuotes else { return value }
        var escaped = ""
        for character in value {
            if character == "\\" || character == "'" { escaped.append("\\") }
            escaped.append(character)
        }
        return "'\(escaped)'"
    }
}
