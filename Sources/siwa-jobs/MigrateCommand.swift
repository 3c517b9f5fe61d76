import Postgres
import SIWAJobs

/// `siwa-jobs migrate`: applies the migrations embedded in the binary.
enum MigrateCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: [])
        try args.noPositionals("migrate")
        let connection = try await PostgresConnection.connect(settings.postgres)
        defer { connection.close() }
        let report = try await Migrator().migrate(on: connection)
        for name in report.applied { say("applied \(name)") }
        say("migrations: \(report.applied.count) applied, \(report.alreadyApplied.count) already applied")
        return 0
    }
}
