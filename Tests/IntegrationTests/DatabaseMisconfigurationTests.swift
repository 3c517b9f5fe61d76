import Foundation
import Postgres
import Testing

/// Database settings that cannot work exit 78 (a rotated password must not fail silently every
/// night as "try later"); failures that may pass exit 75. Through the real binary (`work --drain`,
/// the cron command, and `migrate`) against the real test cluster.
@Suite(.serialized) struct DatabaseMisconfigurationTests {
    /// The password of the test's login role, never expected in any output.
    static let password = "right-" + String(UUID().uuidString.prefix(8))
    static let wrongPassword = "wrong-" + String(UUID().uuidString.prefix(8))

    /// The environment of the test process, with the database settings changed.
    static func environment(_ changes: [String: String?]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "DATABASE_URL")
        for (key, value) in changes { env[key] = value }
        return env
    }

    /// Runs `arguments` and checks the exit status, that stderr names `mentions`, and that no
    /// password reaches stdout or stderr.
    static func expectExit(_ status: Int32, _ arguments: [String], _ env: [String: String], mentions: [String],
                           case name: String) async throws {
        let run = try await BinaryProcess.run(arguments, environment: env)
        #expect(run.status == status, "\(name): \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderr)")
        for text in mentions { #expect(run.stderr.contains(text), "\(name): stderr should name \(text): \(run.stderr)") }
        for secret in [password, wrongPassword, "hunter2"] {
            #expect(!run.stderr.contains(secret) && !run.stdout.contains(secret), "\(name): a password leaked: \(run.stderr)")
        }
        #expect(!run.stderr.contains("Fatal error"), "\(name): \(run.stderr)")
    }

    /// A login role that must authenticate with `password` (pg-up.sh makes members of
    /// `siwa_password_login` log in with scram-sha-256). Dropped by the caller.
    static func passwordRole() async throws -> String {
        let role = "siwa_pw_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=postgres"))
        defer { admin.close() }
        let rules = try await admin.query("""
            SELECT count(*)::int AS n FROM pg_hba_file_rules
            WHERE 'siwa_password_login' = ANY (user_name) OR '+siwa_password_login' = ANY (user_name)
            """)
        let found: Int = try rules.first?.decode("n") ?? 0
        guard found > 0 else {
            throw TestFailure("the test cluster has no password rule for siwa_password_login: re-run scripts/pg-up.sh")
        }
        try await admin.simpleQuery(unsafeSQL: """
            CREATE ROLE \(role) LOGIN PASSWORD '\(password)' IN ROLE siwa_password_login;
            GRANT CONNECT ON DATABASE postgres TO \(role)
            """)
        return role
    }

    static func dropRole(_ role: String) async {
        guard let admin = try? await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=postgres")) else { return }
        defer { admin.close() }
        _ = try? await admin.simpleQuery(unsafeSQL: "DROP ROLE IF EXISTS \(role)")
    }

    @Test func aWrongOrMissingPasswordExits78NamingThePasswordSettings() async throws {
        let role = try await Self.passwordRole()
        // Over TCP and over the socket: both must ask for the password.
        for host in ["127.0.0.1", ProcessInfo.processInfo.environment["PGHOST"] ?? "/tmp/siwa-pg"] {
            try await Self.expectExit(78, ["work", "--drain"],
                                      Self.environment(["PGHOST": host, "PGUSER": role, "PGPASSWORD": Self.wrongPassword]),
                                      mentions: ["database configuration error", "password authentication failed", "PGPASSWORD"],
                                      case: "wrong password via \(host)")
            try await Self.expectExit(78, ["work", "--drain"],
                                      Self.environment(["PGHOST": host, "PGUSER": role, "PGPASSWORD": nil, "PGPASSFILE": "/dev/null"]),
                                      mentions: ["no password supplied", "PGPASSWORD"], case: "no password via \(host)")
        }
        let url = "postgresql://\(role):\(Self.wrongPassword)@127.0.0.1:\(ProcessInfo.processInfo.environment["PGPORT"] ?? "5432")/postgres"
        try await Self.expectExit(78, ["migrate"], Self.environment(["DATABASE_URL": url]),
                                  mentions: ["password authentication failed", "PGPASSWORD"], case: "wrong password in DATABASE_URL")
        // The right password connects: the failures above were the password's.
        let right = try await BinaryProcess.run(["doctor"], environment: Self.environment([
            "PGHOST": "127.0.0.1", "PGUSER": role, "PGPASSWORD": Self.password, "PGDATABASE": "postgres"]))
        #expect(right.stdout.contains("ok    database: "), "\(right.stdout)\(right.stderr)")
        await Self.dropRole(role)
    }

    /// Refused by the server or by libpq: the CLI's database line naming the setting. (A
    /// DATABASE_URL that libpq cannot even parse is refused before connecting, also 78.)
    @Test(arguments: [
        ("unknown role", ["PGUSER": "siwa_no_such_role"], ["database configuration error", "PGUSER"]),
        ("unknown database", ["PGDATABASE": "siwa_no_such_database"], ["database configuration error", "PGDATABASE"]),
        ("sslmode=bogus", ["PGSSLMODE": "bogus"], ["database configuration error", "PGSSLMODE"]),
        ("PGPORT=abc", ["PGPORT": "abc"], ["database configuration error", "PGPORT"]),
        ("DATABASE_URL with sslmode=bogus", ["DATABASE_URL": "postgresql://127.0.0.1/siwa?sslmode=bogus"],
         ["database configuration error", "PGSSLMODE"]),
        ("DATABASE_URL with a bad port", ["DATABASE_URL": "postgresql://u:hunter2@127.0.0.1:port/siwa"],
         ["database configuration error", "PGPORT"]),
        ("DATABASE_URL with a broken escape", ["DATABASE_URL": "postgresql://u:hunter2%zz@127.0.0.1/siwa"], ["DATABASE_URL"]),
        ("DATABASE_URL with an unknown parameter", ["DATABASE_URL": "postgresql://127.0.0.1/siwa?sslmdoe=require"],
         ["DATABASE_URL"]),
        ("conninfo with an unknown keyword", ["DATABASE_URL": "hots=127.0.0.1 dbname=siwa"], ["DATABASE_URL"]),
        ("conninfo without =", ["DATABASE_URL": "host=127.0.0.1 password"], ["DATABASE_URL"]),
    ] as [(String, [String: String], [String])])
    func settingsLibpqRefusesExit78(name: String, changes: [String: String], mentions: [String]) async throws {
        for command in [["work", "--drain"], ["migrate"]] {
            try await Self.expectExit(78, command, Self.environment(changes), mentions: mentions, case: name)
        }
    }

    @Test func failuresThatMayPassExit75() async throws {
        let timeoutListener = try SilentListener()
        let cases: [(String, [String: String?], String)] = [
            ("connection refused (nothing listening)", ["PGHOST": "127.0.0.1", "PGPORT": "1"], "is PostgreSQL running"),
            ("unreachable host (Linux refuses TCP to the broadcast address)", ["PGHOST": "255.255.255.255"], "no route"),
            ("DNS failure", ["PGHOST": "siwa-no-such-host.invalid"], "does not resolve"),
            ("connect timeout (a server that never answers)",
             ["DATABASE_URL": "postgresql://127.0.0.1:\(timeoutListener.port)/siwa?connect_timeout=2"], "timeout"),
        ]
        for (name, changes, mentions) in cases {
            try await Self.expectExit(75, ["work", "--drain"], Self.environment(changes),
                                      mentions: ["database unreachable", mentions], case: name)
        }
        timeoutListener.close()
    }

    @Test func tooManyConnectionsExits75() async throws {
        let role = "siwa_full_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=postgres"))
        defer { admin.close() }
        try await admin.simpleQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 0")
        try await Self.expectExit(75, ["work", "--drain"], Self.environment(["PGUSER": role]),
                                  mentions: ["too many connections", "connection slot"], case: "connection limit reached")
        try await admin.simpleQuery(unsafeSQL: "DROP ROLE \(role)")
    }
}

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes the handshake, so a client
/// connects and then waits for an answer that never comes.
final class SilentListener: @unchecked Sendable {   // fd is set once in init and closed once
    let port: UInt16
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            _ = Glibc.close(fd)
            throw TestFailure("bind/listen: errno \(errno)")
        }
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
    }

    func close() { _ = Glibc.close(fd) }
}
