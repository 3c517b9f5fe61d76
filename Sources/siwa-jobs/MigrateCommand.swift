import Commands
import Postgres
import SIWAJobs

/// `siwa-jobs migrate`: applies the migrations embedded in the binary.
enum MigrateCommand: Command {
    static let spec = CommandSpec(
        "migrate", abstract: "apply sql/ migrations (embedded in the binary); idempotent",
        discussion: "Each migration runs in a transaction and is recorded with its checksum; an applied migration "
            + "whose text changed is refused (exit 65). A database migrated by a newer release (it records migrations "
            + "this binary does not ship) is refused before anything is applied (exit 78).",
        environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let connection = try await PostgresConnection.connect(context.configuration.postgres)
        defer { connection.close() }
        let report = try await Migrator().migrate(on: connection)
        for name in report.applied { say("applied \(name)") }
        say("migrations: \(report.applied.count) applied, \(report.alreadyApplied.count) already applied")
        return .success
    }
}
