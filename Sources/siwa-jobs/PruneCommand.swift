import Commands
import Postgres
import SIWAJobs

/// `siwa-jobs prune [--dry-run] [--json]`: retention (README "Retention and job control"): drops
/// the partitions of jobs finished more than `--job-days` ago (their summaries stay), deletes audit
/// rows older than `--audit-days`, drops notification payloads processed more than
/// `--payload-days` ago. Safe beside running workers; meant for cron or a systemd timer.
enum PruneCommand: Command {
    static let dryRun = Declare.switch("dry-run", help: "count what would go; change nothing")
    static let json = Declare.switch("json", help: "one JSON object instead of text")
    static let jobDays = Declare.value("job-days", "N", .integer(in: 0...36_500), default: 30,
                                       help: "keep finished jobs' items and results this many days")
    static let auditDays = Declare.value("audit-days", "N", .integer(in: 0...36_500), default: 400,
                                         help: "keep audit rows this many days")
    static let payloadDays = Declare.value("payload-days", "N", .integer(in: 0...36_500), default: 7,
                                           help: "keep raw notification payloads this many days after processing")

    static let spec = CommandSpec(
        "prune", abstract: "drop finished jobs' items and results after the retention period (keeps summaries)",
        discussion: "Items, results and result history are partitioned by job; a partition goes whole once every job in it "
            + "finished more than --job-days ago (never a running or paused job). Every job keeps its summary in "
            + "siwa.job_summaries. Safe beside running workers (partitions are detached concurrently).",
        options: [dryRun, json, jobDays, auditDays, payloadDays], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let policy = RetentionPolicy(jobDays: arguments[jobDays], auditDays: arguments[auditDays],
                                     payloadDays: arguments[payloadDays])
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let outcome = await Result(catching: { try await Retention(pool: pool).prune(policy: policy, dryRun: arguments[dryRun]) })
        await pool.close()
        let report = try outcome.get()
        if arguments[json] { say(report.json) } else { report.lines.forEach(say) }
        return .success
    }
}
