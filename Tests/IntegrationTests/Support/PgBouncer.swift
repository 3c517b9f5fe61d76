import Foundation
import Postgres
import Testing

/// How a test's `siwa-jobs` processes reach PostgreSQL.
enum DatabaseRoute: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The cluster itself (the PG* environment of `scripts/pg-up.sh`).
    case direct
    /// PgBouncer in transaction mode in front of it (`scripts/pgbouncer-up.sh`, started by
    /// `scripts/test.sh`): 127.0.0.1, port `SIWA_TEST_PGBOUNCER_PORT`.
    case pgbouncer

    var testDescription: String { rawValue }
}

enum PgBouncer {
    /// `SIWA_TEST_PGBOUNCER_PORT`. A test that needs PgBouncer fails without it, never skips.
    /// - Throws: `TestFailure` saying how to start it.
    static func port() throws -> UInt16 {
        guard let text = ProcessInfo.processInfo.environment["SIWA_TEST_PGBOUNCER_PORT"], let port = UInt16(text) else {
            throw TestFailure("SIWA_TEST_PGBOUNCER_PORT is not set: run scripts/test.sh, or start PgBouncer with "
                + "scripts/pgbouncer-up.sh DIR PORT $PGPORT and export SIWA_TEST_PGBOUNCER_PORT=PORT")
        }
        return port
    }

    /// A connection to `database` through PgBouncer (the test's own, for checks).
    static func connect(database: String) async throws -> PostgresConnection {
        try await PostgresConnection.connect(PostgresConfiguration(
            conninfo: "host=127.0.0.1 port=\(try port()) dbname=\(database)", applicationName: "siwa-tests"))
    }
}

extension TestDatabase {
    /// The environment of a subprocess reaching this database by `route`.
    /// - Throws: `TestFailure` when `route` is `.pgbouncer` and PgBouncer is not configured.
    func environment(via route: DatabaseRoute) throws -> [String: String] {
        try PgBouncer.route(environment, via: route)
    }
}

extension SIWAWorld {
    /// `environment` reaching the database by `route`.
    func environment(via route: DatabaseRoute) throws -> [String: String] {
        try PgBouncer.route(environment, via: route)
    }
}

extension PgBouncer {
    /// `env` with PGHOST and PGPORT pointing at PgBouncer for `.pgbouncer`, as is for `.direct`.
    static func route(_ env: [String: String], via route: DatabaseRoute) throws -> [String: String] {
        guard route == .pgbouncer else { return env }
        var routed = env
        routed["PGHOST"] = "127.0.0.1"
        routed["PGPORT"] = String(try port())
        return routed
    }
}
