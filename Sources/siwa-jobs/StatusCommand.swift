import AppleID
import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs status [--job N] [--sandbox URL]`: progress from the `siwa.job_progress` view; with
/// `--sandbox`, also compares valid/invalid counts with the sandbox's seeded truth (exit 1 on mismatch).
enum StatusCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["job", "sandbox", "team-id", "client-id"])
        try args.noPositionals("status")
        let jobID = try args.int("job", in: 1...Int.max).map(Int64.init)
        let connection = try await PostgresConnection.connect(settings.postgres)
        defer { connection.close() }
        let filter: SQL = jobID.map { "WHERE job_id = \($0)" } ?? "WHERE true"
        let rows = try await connection.query("""
            SELECT job_id, kind, job_state, coalesce(paused_reason, '') AS paused_reason, items, available, running,
                   succeeded, failed, discarded, terminal, valid, invalid, retried,
                   coalesce(extract(epoch FROM last_result_at - created_at), 0)::float8 AS elapsed_s
            FROM siwa.job_progress
            """ + " " + filter + " ORDER BY job_id")
        if rows.isEmpty {
            guard let jobID else {
                say("no jobs yet")
                return 0
            }
            SIWAJobsCommand.fail("job \(jobID) not found")
            return 1
        }
        for row in rows {
            let id: Int64 = try row.decode("job_id")
            let kind: String = try row.decode("kind")
            let state: String = try row.decode("job_state")
            let n = { (c: String) throws -> Int in try row.decode(c) }
            say("job \(id) \(kind) [\(state)] items=\(try n("items")) terminal=\(try n("terminal")) "
                + "succeeded=\(try n("succeeded")) failed=\(try n("failed")) discarded=\(try n("discarded")) "
                + "available=\(try n("available")) running=\(try n("running")) retried=\(try n("retried")) "
                + "valid=\(try n("valid")) invalid=\(try n("invalid"))"
                + String(format: " elapsed_s=%.1f", try row.decode("elapsed_s", as: Double.self)))
            let reason: String = try row.decode("paused_reason")
            if !reason.isEmpty { say("  paused: \(reason)") }
        }
        guard let sandbox = args.string("sandbox"), let row = rows.last else { return 0 }
        let team = try settings.require("SIWA_TEAM_ID", flag: "team-id", arguments: args)
        let client = try settings.require("SIWA_CLIENT_ID", flag: "client-id", arguments: args)
        let truth = try await SandboxAdminClient(baseURL: sandbox).truth(teamID: team, clientID: client)
        let valid: Int = try row.decode("valid"), invalid: Int = try row.decode("invalid")
        let terminal: Int = try row.decode("terminal"), items: Int = try row.decode("items")
        let matches = valid == truth.valid && invalid == truth.revoked && terminal == items
        say("sandbox truth: valid=\(truth.valid) revoked=\(truth.revoked); job: valid=\(valid) invalid=\(invalid) "
            + "terminal=\(terminal)/\(items) -> \(matches ? "MATCH" : "MISMATCH")")
        return matches ? 0 : 1
    }
}
