import Commands
import Postgres
import SIWACore
import SIWAJobs

/// `siwa-jobs workers [--json]`: the live `work` and `notifications serve` processes, from the
/// worker registry (`siwa.live_workers`): those whose last heartbeat is within their timeout.
enum WorkersCommand: Command {
    static let json = Declare.switch("json", help: "a JSON array instead of the table")

    static let spec = CommandSpec(
        "workers", abstract: "list the live worker processes (the worker registry)",
        discussion: "One line per process that heartbeats into siwa.workers: id, host, pid, version, command, start, "
            + "last heartbeat, concurrency, kinds, items in flight and the Apple rate it holds. A process that died "
            + "without stopping drops out once its heartbeat timeout has passed.",
        options: [json], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let loaded = await Result(catching: { try await WorkerRegistry(pool: pool).live() })
        await pool.close()
        let workers = try loaded.get()
        if arguments[json] {
            say(WorkersReport.json(workers))
        } else {
            // Rows hold what each worker registered: one line each, control characters escaped.
            WorkersReport.table(workers).forEach { say(PrintableText.escaped($0)) }
        }
        return .success
    }
}
