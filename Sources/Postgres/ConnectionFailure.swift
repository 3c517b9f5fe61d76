/// Why a connection attempt failed, read from libpq's message.
///
/// libpq gives a failed connect no SQLSTATE (this layer reports 08001 for all of them), so the
/// message is the only evidence: the server's FATAL for authentication and catalog errors, and
/// libpq's own text for connection options it refuses
/// (https://www.postgresql.org/docs/15/libpq-connect.html). Settings problems are
/// `misconfigured` (retrying cannot help); everything else (refused, unreachable, DNS, timeout,
/// too many clients, a server starting up or shutting down) is not. Messages are matched in
/// libpq's and the server's English (a server with localized `lc_messages` answers in its
/// language; such a failure stays "not misconfigured", as before).
struct ConnectionFailure: Sendable, Equatable {
    /// True when the settings are wrong, not the network or the server's state.
    let misconfigured: Bool
    /// Which setting is likely wrong, or what to check; nil when nothing useful can be said.
    let hint: String?

    private static let passwordSources = "PGPASSWORD, the password in DATABASE_URL, or ~/.pgpass"
    private static let conninfoHint = "DATABASE_URL is not a valid libpq connection URI or key=value string: fix its syntax"

    /// Variables that set each connection option (libpq-envars), for hints.
    private static let variables: [String: String] = [
        "host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "dbname": "PGDATABASE", "user": "PGUSER",
        "connect_timeout": "PGCONNECT_TIMEOUT", "sslmode": "PGSSLMODE", "gssencmode": "PGGSSENCMODE",
        "target_session_attrs": "PGTARGETSESSIONATTRS", "channel_binding": "PGCHANNELBINDING",
        "ssl_min_protocol_version": "PGSSLMINPROTOCOLVERSION", "ssl_max_protocol_version": "PGSSLMAXPROTOCOLVERSION",
        "sslrootcert": "PGSSLROOTCERT", "service": "PGSERVICE",
    ]

    /// Options whose value must be one of a list; libpq says `invalid <option> value: "…"`.
    private static let enumeratedOptions = [
        "sslmode", "gssencmode", "target_session_attrs", "channel_binding", "ssl_min_protocol_version",
        "ssl_max_protocol_version", "sslcertmode", "sslnegotiation", "load_balance_hosts", "require_auth",
    ]

    /// - Parameters:
    ///   - message: libpq's error message (redacted or not; only fixed phrases are matched).
    ///   - needsPassword: `PQconnectionNeedsPassword`: the server asked for a password and none
    ///     was supplied.
    ///   - conninfoParses: false when `PQconninfoParse` refuses the connection string itself.
    static func classify(message: String, needsPassword: Bool, conninfoParses: Bool) -> ConnectionFailure {
        if !conninfoParses { return misconfigured(conninfoHint) }
        if needsPassword || message.contains("no password supplied") {
            return misconfigured("the server asks for a password and none was given: set \(passwordSources)")
        }
        if message.contains("password authentication failed") {
            return misconfigured("wrong password for the role, or the role is not what you meant: check PGUSER and "
                + passwordSources)
        }
        if message.contains("authentication failed for user") {
            return misconfigured("the server refused the role by its pg_hba.conf method: check PGUSER, or the "
                + "server's pg_hba.conf")
        }
        if message.contains("role \""), message.contains("\" does not exist") {
            return misconfigured("unknown role: check PGUSER or the user in DATABASE_URL")
        }
        if message.contains("database \""), message.contains("\" does not exist") {
            return misconfigured("unknown database: check PGDATABASE or the database name in DATABASE_URL; "
                + "a new one is created by hand, then 'siwa-jobs migrate'")
        }
        if message.contains("no pg_hba.conf entry") || message.contains("pg_hba.conf rejects connection") {
            return misconfigured("the server's pg_hba.conf admits no such connection: check PGHOST, PGUSER, "
                + "PGDATABASE and PGSSLMODE, or the server's pg_hba.conf")
        }
        if message.contains("is not permitted to log in") {
            return misconfigured("the role may not log in (NOLOGIN): check PGUSER, or ALTER ROLE … LOGIN")
        }
        if message.contains("permission denied for database") {
            return misconfigured("the role lacks CONNECT on the database: check PGUSER and PGDATABASE, or GRANT CONNECT")
        }
        if message.contains("SSL was required") || message.contains("SSL is not enabled")
            || message.contains("certificate verify failed") || message.contains("root certificate")
            || message.contains("does not match host name") {
            return misconfigured("the TLS settings do not fit this server: check PGSSLMODE (sslmode) and PGSSLROOTCERT")
        }
        if let option = quoted(after: "for connection option ", in: message) {
            return misconfigured("\(setting(option)) is not a valid number")
        }
        if let option = enumeratedOptions.first(where: { message.contains("invalid \($0) value") }) {
            return misconfigured("\(setting(option)) is not one of the values libpq accepts")
        }
        if message.contains("invalid port number") || message.contains("could not match") {
            return misconfigured("PGHOST, PGHOSTADDR and PGPORT (or host and port in DATABASE_URL) do not fit together: "
                + "give one port, or one per host")
        }
        if message.contains("could not parse network address") {
            return misconfigured("PGHOSTADDR (hostaddr) is not a numeric IP address: use PGHOST for names")
        }
        if message.contains("definition of service") || message.contains("service file") {
            return misconfigured("PGSERVICE names a service that the service file does not define")
        }
        let syntax = ["invalid connection option", "missing \"=\"", "unterminated quoted string", "invalid URI",
                      "invalid percent-encoded token", "end of string reached", "may not be empty in URI",
                      "unexpected character", "extra key/value separator", "forbidden value %00"]
        if syntax.contains(where: message.contains) { return misconfigured(conninfoHint) }
        return ConnectionFailure(misconfigured: false, hint: transientHint(message))
    }

    private static func misconfigured(_ hint: String) -> ConnectionFailure {
        ConnectionFailure(misconfigured: true, hint: hint)
    }

    /// What to check for a failure that may pass (the run exits 75 and cron tries again).
    private static func transientHint(_ message: String) -> String? {
        if message.contains("Connection refused") || message.contains("No such file or directory") {
            return "nothing accepts connections there: is PostgreSQL running, and are PGHOST and PGPORT right?"
        }
        if message.contains("could not translate host name") {
            return "the host name does not resolve: DNS may be down, or PGHOST (host in DATABASE_URL) is misspelt"
        }
        if message.contains("timeout expired") || message.contains("timed out") {
            return "no answer within the connect timeout: the server or the network is slow or down"
        }
        if message.contains("too many clients") || message.contains("too many connections")
            || message.contains("connection slots are reserved") {
            return "the server has no connection slot free: lower --pool-size or raise max_connections"
        }
        if message.contains("unreachable") || message.contains("No route to host") {
            return "the network has no route to the server: check the network, or PGHOST"
        }
        if message.contains("starting up") || message.contains("shutting down") || message.contains("recovery mode")
            || message.contains("closed the connection unexpectedly") || message.contains("not currently accepting") {
            return "the server is starting, stopping or restarting: try again shortly"
        }
        return nil
    }

    /// A connection option and the variable that sets it, e.g. `port (PGPORT, or port in DATABASE_URL)`.
    private static func setting(_ option: String) -> String {
        guard let variable = variables[option] else { return "the connection option \(option) (in DATABASE_URL)" }
        return "\(variable) (\(option) in DATABASE_URL)"
    }

    /// The double-quoted text right after `prefix` in `message`, e.g. `port` in
    /// `invalid integer value "abc" for connection option "port"`.
    private static func quoted(after prefix: String, in message: String) -> String? {
        guard let start = message.range(of: prefix + "\"")?.upperBound,
              let end = message[start...].firstIndex(of: "\"") else { return nil }
        return String(message[start..<end])
    }
}
