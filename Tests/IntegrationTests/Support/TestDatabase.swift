import Foundation
import Postgres
import SIWAJobs

/// A fresh database per test, migrated, on the cluster the libpq environment points at
/// (`scripts/pg-up.sh`). Dropped by `drop()`. The test's own connections use the application
/// name `siwa-tests`, so tests can tell them from the binary's (`siwa-jobs`).
struct TestDatabase {
    static let applicationName = "siwa-tests"

    let name: String
    let configuration: PostgresConfiguration
    let pool: PostgresPool

    static func create(migrated: Bool = true) async throws -> TestDatabase {
        let name = "siwa_test_\(UInt32.random(in: 0...UInt32.max))_\(getpid())"
        let admin = try await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=postgres"))
        defer { admin.close() }
        try await admin.simpleQuery(unsafeSQL: "CREATE DATABASE \(name)")
        let configuration = PostgresConfiguration(conninfo: "dbname=\(name)", applicationName: applicationName)
        let pool = PostgresPool(configuration: configuration, size: 4)
        if migrated {
            _ = try await pool.withConnection { conn in try await Migrator().migrate(on: conn) }
        }
        return TestDatabase(name: name, configuration: configuration, pool: pool)
    }

    func drop() async {
        await pool.close()
        guard let admin = try? await PostgresConnection.connect(PostgresConfiguration(conninfo: "dbname=postgres")) else { return }
        defer { admin.close() }
        _ = try? await admin.simpleQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// Environment for a subprocess using this database.
    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["PGDATABASE"] = name
        env.removeValue(forKey: "DATABASE_URL")
        return env
    }

    func scalar<T: PostgresDecodable>(_ sql: SQL, as type: T.Type = T.self) async throws -> T {
        let rows = try await pool.withConnection { conn in try await conn.query(sql) }
        guard let row = rows.first, let column = row.columns.first else {
            throw TestFailure("query returned no rows")
        }
        return try row.decode(column, as: T.self)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
