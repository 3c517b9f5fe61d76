import Commands
import Foundation
import Postgres
import SIWACore
import SIWAJobs

/// `siwa-jobs accounts import FILE`: existing accounts in, tokens sealed in this process
/// (`AccountImporter`).
enum AccountsImportCommand: Command {
    static let file = Declare.argument("FILE", .string, help: "CSV with a header, or JSON lines (- reads standard input)")
    static let rejects = Declare.option("rejects", "FILE", .filePath,
                                        help: "load the good rows and write the bad ones, with reasons, to this new file")
    static let json = Declare.switch("json", help: "print the summary as JSON")

    static let spec = CommandSpec(
        "import", abstract: "load existing accounts (and their refresh tokens) for one team and client",
        discussion: "Columns: external_user_id and sub required; refresh_token, email, is_private_email, token_checked_at "
            + "optional (an empty value keeps what is stored). An upsert by (team, client, external_user_id): loading the "
            + "same file again changes 0 rows. Tokens are encrypted before they leave this process. Any bad row refuses the "
            + "whole file (exit 65, every bad line listed, nothing written) unless --rejects is given (then exit 1 when "
            + "rows were rejected). A file that cannot be read exits 66.",
        arguments: [file], options: [CommonOptions.teamID, CommonOptions.clientID, rejects, json, CommonOptions.createdBy],
        environment: [EnvironmentDocs.database, EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2]]
            + EnvironmentDocs.tokenKey + [EnvironmentDocs.user] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let settings = context.configuration
        let path = try arguments.required(file)
        let (team, client) = try settings.jobTarget(teamID: arguments[CommonOptions.teamID], clientID: arguments[CommonOptions.clientID])
        let keyring = try settings.keyring()
        let report = try await Transfer.withPool(context) { pool in
            try await AccountImporter(pool: pool, keyring: keyring).run(
                path: path, teamID: team, clientID: client, rejectsPath: arguments[rejects],
                createdBy: arguments[CommonOptions.createdBy] ?? settings.operatorName)
        }
        let name = path == "-" ? "standard input" : PrintableText.quotedPath(path)
        if arguments[json] {
            let data = try JSONEncoder.sorted.encode(report)
            say(String(decoding: data, as: UTF8.self))
        } else {
            report.notes.forEach { say("note: \($0)") }
        }
        guard report.applied else {
            var lines = report.errors.map { "\(name): \($0)" }
            if report.rejected > report.errors.count { lines.append("\(name): ... and \(counted(report.rejected - report.errors.count, "more error"))") }
            lines.append("\(name): refused (\(counted(report.rejected, "error")) in \(counted(report.rows, "row"))); nothing was written")
            lines.forEach(complain)
            return .of(report)
        }
        if !arguments[json] {
            let changes = report.rows == report.rejected ? "nothing written"
                : report.changed == 0 ? "0 rows changed (every account already held these values)"
                : "\(report.inserted) inserted, \(report.updated) updated, \(report.unchanged) unchanged"
            // Rejected rows (--rejects) are not counted as imported: "imported 6 of 10 rows".
            let imported = report.rejected > 0 ? "\(report.rows - report.rejected) of \(counted(report.rows, "row"))"
                : counted(report.rows, "row")
            say("imported \(imported) from \(name) into team \(team) client \(client): \(changes); "
                + "\(counted(report.tokensSealed, "refresh token")) encrypted")
            if let out = arguments[rejects], report.rejected > 0 {
                say("\(counted(report.rejected, "row")) rejected, written with \(report.rejected == 1 ? "its reason" : "their reasons") "
                    + "to \(PrintableText.quotedPath(out))")
            }
        }
        return .of(report)
    }
}

/// `siwa-jobs accounts export`: the same columns, without tokens (`AccountExporter`).
enum AccountsExportCommand: Command {
    static let out = Declare.value("out", "FILE", .string, default: "-", help: "a new file to write (- is standard output)")
    static let format = Declare.value("format", "F", .choice(["csv", "json-lines"]), default: "csv", help: "csv or json-lines")

    static let spec = CommandSpec(
        "export", abstract: "write the accounts of one team and client without tokens (loads back with accounts import)",
        discussion: "Columns external_user_id, sub, email, is_private_email, token_checked_at; deleted accounts are left out. "
            + "Streamed in pages; the count goes to stderr when writing to standard output.",
        options: [CommonOptions.teamID, CommonOptions.clientID, out, format],
        environment: [EnvironmentDocs.database, EnvironmentDocs.singleTeam[0], EnvironmentDocs.singleTeam[2]] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let settings = context.configuration
        let (team, client) = try settings.jobTarget(teamID: arguments[CommonOptions.teamID], clientID: arguments[CommonOptions.clientID])
        let path = arguments[out]
        // A new file, whole or not at all (`OutputFile`, published by link(2): never over a file).
        func refusal(_ code: Int32) -> CommandFailure {
            CommandFailure("--out \(PrintableText.quotedPath(path)) cannot be created: \(String(cString: strerror(code)).lowercased())"
                + (code == EEXIST ? " (it exists; name a new file)" : ""))
        }
        if path != "-" && FileManager.default.fileExists(atPath: path) { throw refusal(EEXIST) }
        let file: OutputFile?
        do { file = path == "-" ? nil : try OutputFile(path: path, replacing: false) } catch { throw refusal(error.code) }
        let handle = file?.handle ?? .standardOutput
        let chosen: AccountExporter.Format = arguments[format] == "csv" ? .csv : .jsonLines
        let exported = await Result(catching: {
            try await Transfer.withPool(context) { pool in
                try await AccountExporter(pool: pool).export(teamID: team, clientID: client, format: chosen) { bytes in
                    try handle.write(contentsOf: Data(bytes))
                }
            }
        })
        if case .failure = exported { file?.discard() }
        let count = try exported.get()
        if let file {
            do { try file.publish() } catch { throw refusal(error.code) }
            say("exported \(count) accounts of team \(team) client \(client) to \(PrintableText.quotedPath(path))")
        } else {
            complain("exported \(count) accounts of team \(team) client \(client)")
        }
        return .success
    }
}

extension JSONEncoder {
    /// Keys sorted, slashes unescaped: stable one-line JSON for `--json` summaries.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
