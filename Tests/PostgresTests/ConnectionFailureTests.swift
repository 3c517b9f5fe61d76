import Testing
@testable import Postgres

/// Failed connects by meaning: libpq's own messages (as libpq 15 and the server write them) read
/// as settings problems or as failures that may pass, and real connects against the test cluster.
@Suite struct ConnectionFailureTests {
    /// Messages libpq gives for settings problems, and the variable each hint must name.
    static let misconfigured: [(message: String, names: String)] = [
        (#"connection to server at "127.0.0.1", port 5432 failed: FATAL:  password authentication failed for user "bob""#,
         "PGPASSWORD"),
        (#"connection to server on socket "/tmp/.s.PGSQL.5432" failed: fe_sendauth: no password supplied"#, "PGPASSWORD"),
        (#"connection to server on socket "/tmp/.s.PGSQL.5432" failed: FATAL:  role "nobody" does not exist"#, "PGUSER"),
        (#"connection to server on socket "/tmp/.s.PGSQL.5432" failed: FATAL:  database "nodb" does not exist"#,
         "PGDATABASE"),
        (#"connection to server at "10.0.0.1", port 5432 failed: FATAL:  no pg_hba.conf entry for host "10.0.0.2", user "u", database "d", no encryption"#,
         "pg_hba.conf"),
        (#"connection to server on socket "/tmp/.s.PGSQL.5432" failed: FATAL:  role "r" is not permitted to log in"#,
         "PGUSER"),
        (#"connection to server on socket "/tmp/.s.PGSQL.5432" failed: FATAL:  permission denied for database "d""#,
         "CONNECT"),
        (#"invalid sslmode value: "bogus""#, "PGSSLMODE"),
        (#"invalid target_session_attrs value: "bogus""#, "PGTARGETSESSIONATTRS"),
        (#"invalid integer value "abc" for connection option "port""#, "PGPORT"),
        (#"connection to server on socket "/tmp/.s.PGSQL.5432" failed: invalid integer value "x" for connection option "connect_timeout""#,
         "PGCONNECT_TIMEOUT"),
        (#"invalid connection option "hots""#, "DATABASE_URL"),
        (#"missing "=" after "garbage" in connection info string"#, "DATABASE_URL"),
        (#"invalid URI query parameter: "foo""#, "DATABASE_URL"),
        (#"connection to server at "127.0.0.1", port 5432 failed: server does not support SSL, but SSL was required"#,
         "PGSSLMODE"),
        (#"definition of service "nosuch" not found"#, "PGSERVICE"),
        (#"could not match 2 port numbers to 3 hosts"#, "PGPORT"),
    ]

    /// Messages of failures that may pass.
    static let transient = [
        "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?",
        "could not translate host name \"db.invalid\" to address: Name or service not known",
        "connection to server at \"255.255.255.255\", port 5432 failed: Network is unreachable",
        "connection to server at \"2001:db8::1\", port 5432 failed: No route to host",
        "connection to server at \"127.0.0.1\", port 5432 failed: timeout expired",
        "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  sorry, too many clients already",
        "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  too many connections for role \"w\"",
        "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  the database system is starting up",
        "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  the database system is shutting down",
        "connection to server at \"db\" (10.0.0.1), port 5432 failed: server closed the connection unexpectedly",
    ]

    @Test func settingsProblemsAreMisconfiguredAndNameTheSetting() {
        for (message, names) in Self.misconfigured {
            let failure = ConnectionFailure.classify(message: message, needsPassword: false, conninfoParses: true)
            #expect(failure.misconfigured, "\(message)")
            #expect(failure.hint?.contains(names) == true, "\(message): \(failure.hint ?? "no hint")")
        }
    }

    @Test func networkAndServerStateFailuresAreNotMisconfigured() {
        for message in Self.transient {
            let failure = ConnectionFailure.classify(message: message, needsPassword: false, conninfoParses: true)
            #expect(!failure.misconfigured, "\(message)")
            #expect(failure.hint != nil, "\(message): a failure that may pass still says what to check")
        }
        #expect(ConnectionFailure.classify(message: "something new", needsPassword: false, conninfoParses: true)
            == ConnectionFailure(misconfigured: false, hint: nil))
    }

    @Test func aPasswordRequestOrAnUnparseableConninfoDecidesAlone() {
        #expect(ConnectionFailure.classify(message: "anything", needsPassword: true, conninfoParses: true).misconfigured)
        #expect(ConnectionFailure.classify(message: "anything", needsPassword: false, conninfoParses: false).misconfigured)
    }

    @Test func meaningFollowsTheFlag() {
        let misconfigured = DatabaseError(kind: .connection, sqlState: "08001", message: "m", misconfiguredConnection: true,
                                          hint: "check PGUSER")
        #expect(misconfigured.meaning == .misconfigured && misconfigured.description.hasSuffix("(check PGUSER)"))
        #expect(DatabaseError(kind: .connection, sqlState: "08001", message: "m").meaning == .transient)
        #expect(DatabaseError.readOnly("a hot standby").meaning == .readOnly)
    }

    /// Real connects (libpq against the test cluster, or nothing at all): the meaning and hint each
    /// gets, and no password in the error.
    @Test(arguments: [
        ("dbname=siwa_no_such_database_x1", DatabaseFailureMeaning.misconfigured, "PGDATABASE"),
        ("user=siwa_no_such_role_x1", .misconfigured, "PGUSER"),
        ("sslmode=bogus", .misconfigured, "PGSSLMODE"),
        ("port=abc", .misconfigured, "PGPORT"),
        ("hots=localhost", .misconfigured, "DATABASE_URL"),
        ("postgres://u:p%zzhunter2@127.0.0.1/x", .misconfigured, "DATABASE_URL"),
        ("host=127.0.0.1 port=1 password=hunter2", .transient, "running"),
        ("host=siwa-no-such-host.invalid password=hunter2", .transient, "DNS"),
    ])
    func realConnectFailures(conninfo: String, meaning: DatabaseFailureMeaning, hint: String) async throws {
        let settings = PostgresConfiguration(conninfo: conninfo, connectTimeoutSeconds: 5)   // the rest from PG*
        do {
            let connection = try await PostgresConnection.connect(settings)
            connection.close()
            Issue.record("\(conninfo): expected the connection to fail")
        } catch {
            #expect(error.meaning == meaning, "\(conninfo): \(error)")
            #expect(error.hint?.contains(hint) == true, "\(conninfo): \(error)")
            #expect(!error.description.contains("hunter2"), "\(error)")
        }
    }
}
