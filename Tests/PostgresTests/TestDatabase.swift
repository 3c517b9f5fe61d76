import Foundation
import Postgres
import Testing

/// Where the test cluster is: DATABASE_URL, else the PG* variables (`scripts/test.sh` sets them
/// from `scripts/pg-up.sh`). There is no fallback to another cluster: without them, libpq's own
/// defaults apply and, with no server there, the tests fail. Tests never skip.
enum TestDatabase {
    static func configuration(applicationName: String = "siwa-postgres-tests") -> PostgresConfiguration {
        let env = ProcessInfo.processInfo.environment
        var configuration = PostgresConfiguration.fromEnvironment(env)
        configuration.connectTimeoutSeconds = 5
        configuration.applicationName = applicationName
        return configuration
    }

    static func connect(applicationName: String = "siwa-postgres-tests") async throws -> PostgresConnection {
        let configuration = configuration(applicationName: applicationName)
        do {
            return try await PostgresConnection.connect(configuration)
        } catch {
            throw SetupFailure(description: """
                PostgreSQL is not reachable at \(configuration.redactedDescription): \(error). \
                Start the test cluster with: eval "$(scripts/pg-up.sh)"
                """)
        }
    }

    /// A lower-case name unique to this run, for tables, channels and application names.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Terminates the backends with `applicationName` (or `pid`) and waits until they are gone.
    static func terminate(pid: Int32? = nil, applicationName: String? = nil) async throws -> Int {
        let killer = try await connect(applicationName: "siwa-postgres-tests-killer")
        defer { killer.close() }
        let rows: [PostgresRow]
        if let pid {
            rows = try await killer.query("SELECT pg_terminate_backend(\(pid), 5000) AS ok")
        } else {
            rows = try await killer.query("""
                SELECT pg_terminate_backend(pid, 5000) AS ok FROM pg_stat_activity
                WHERE application_name = \(applicationName ?? "") AND pid <> pg_backend_pid()
                """)
        }
        return try rows.filter { try $0.decode("ok", as: Bool.self) }.count
    }
}

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}
