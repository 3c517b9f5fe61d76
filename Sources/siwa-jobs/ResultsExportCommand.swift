import Commands
import Foundation
import Postgres
import SIWACore
import SIWAJobs

/// `siwa-jobs results export --job N [--outcome O]... --format csv|jsonl [--out FILE]`: a job's
/// results, streamed (pages of 5,000), with token fingerprints only.
enum ResultsExportCommand: Command {
    static let job = Declare.option("job", "N", .integer(in: 1...Int.max), help: "the job id", required: true)
    static let outcome = Declare.repeated("outcome", "O", .string, help: "only results with this outcome")
    static let format = Declare.option("format", "F", .choice(ResultsExporter.Format.allCases.map(\.rawValue)),
                                       help: "csv (with a header line) or jsonl (one JSON object a line)", required: true)
    static let out = Declare.option("out", "FILE", .string, help: "write here (created with mode 0600, replaced if it exists); - is standard output",
                                    defaultText: "stdout")
    static let pageSize = Declare.value("page-size", "N", .integer(in: 1...100_000), default: 5_000,
                                        help: "results read per query (memory stays bounded by one page)")
    static let spec = CommandSpec(
        "export", abstract: "stream a job's results as CSV or JSON lines (no secrets: token fingerprints only)",
        discussion: "Fields: item_id, account_id, external_user_id, outcome, http_status, apple_error, token_fingerprint, "
            + "attempt, created_at (UTC), detail (JSON). Results move to siwa.result_history on job retry; the export "
            + "shows the current ones.",
        options: [job, outcome, format, out, pageSize], environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let id = Int64(try arguments.required(job))
        let chosen = ResultsExporter.Format(rawValue: try arguments.required(format)) ?? .csv
        // --out: whole or not at all, mode 0600 (`OutputFile`); a file already there is replaced only once the export is complete.
        var file: OutputFile?
        let path = arguments[out].flatMap { $0 == "-" ? nil : $0 }
        if let path {
            do { file = try OutputFile(path: path, replacing: true) } catch { throw CommandFailure(error.description) }
        }
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let exporter = ResultsExporter(pool: pool, pageSize: arguments[pageSize])
        let written = await Result(catching: { () async throws -> (rows: Int, outcomes: [String]) in
            // A job id that does not exist is said as such (exit 1), not exported as an empty file.
            guard let known = try await exporter.outcomes(jobID: id) else { throw CommandFailure("job \(id) not found") }
            let rows = try await exporter.export(jobID: id, outcomes: arguments[outcome], format: chosen,
                                                 to: file?.handle ?? .standardOutput)
            return (rows, known)
        })
        await pool.close()
        if case .failure = written { file?.discard() }
        let (rows, known) = try written.get()
        do { try file?.publish() } catch { throw CommandFailure(error.description) }
        if let path { complain("results export: \(counted(rows, "row")) of job \(id) written to \(PrintableText.quotedPath(path))") }
        let unknown = arguments[outcome].filter { !known.contains($0) }
        if !unknown.isEmpty {
            // Not an error (a job may simply have none), but a typo should not pass unseen.
            complain("results export: job \(id) has no result with outcome \(unknown.map { "'\(IdentifierFormat.printable($0))'" }.joined(separator: ", ")); "
                + "its results' outcomes: \(known.isEmpty ? "none yet" : known.joined(separator: ", "))")
        }
        return .success
    }
}
