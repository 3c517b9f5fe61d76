import Foundation
import Postgres
import SIWAJobs

/// `transfer status` and `transfer lookup` output, from `siwa.transfer_status` and
/// `siwa.account_by_transfer_sub`.
enum TransferStatusPrinter {
    static func run(pool: PostgresPool, jobID: Int64?) async throws -> Int32 {
        let filter: SQL = jobID.map { "WHERE job_id = \($0)" } ?? "WHERE true"
        let rows = try await pool.query("""
            SELECT job_id, direction, team_id, client_id, coalesce(peer_team_id, '') AS peer, transfer_date::text AS day,
                   window_closes_on::text AS closes, days_left, canary_size, canary_remaining, canary_succeeded,
                   released_at IS NOT NULL AS released, job_state, coalesce(paused_reason, '') AS paused_reason,
                   items, succeeded, failed, discarded, available, running
            FROM siwa.transfer_status
            """ + " " + filter + " ORDER BY job_id")
        if rows.isEmpty {
            SIWAJobsCommand.fail(jobID.map { "job \($0) is not a transfer job" } ?? "no transfer jobs")
            return 1
        }
        for row in rows {
            let n = { (c: String) throws -> Int in try row.decode(c) }
            let direction: String = try row.decode("direction")
            let peer: String = try row.decode("peer")
            let left = try n("days_left")
            let released: Bool = try row.decode("released")
            say("job \(try row.decode("job_id", as: Int64.self)) transfer-\(direction) [\(try row.decode("job_state", as: String.self))] "
                + "team=\(try row.decode("team_id", as: String.self)) client=\(try row.decode("client_id", as: String.self)) "
                + (direction == "export" ? "target=\(peer)" : "source=\(peer.isEmpty ? "-" : peer)"))
            say("  window: transfer date \(try row.decode("day", as: String.self)), closes \(try row.decode("closes", as: String.self)), "
                + (left >= 0 ? "\(min(left, 60)) days left" + (left > 60 ? " (transfer not yet accepted)" : "")
                             : "CLOSED \(-left) days ago: transfer the app back, then transfer it again and run again"))
            let canary = try n("canary_size")
            if try n("items") == 0 {
                say("  nothing to do: all \(direction == "export" ? "accounts" : "rows") already had an outcome when the job was planned")
            } else if canary == 0 {
                say("  canary: none (all items planned at once)")
            } else {
                say("  canary: \(canary) items, \(try n("canary_succeeded")) succeeded, "
                    + (released ? "rest planned" : "\(try n("canary_remaining")) not finished, rest not planned yet"))
            }
            say("  items=\(try n("items")) succeeded=\(try n("succeeded")) failed=\(try n("failed")) "
                + "discarded=\(try n("discarded")) available=\(try n("available")) running=\(try n("running"))")
            let reason: String = try row.decode("paused_reason")
            if !reason.isEmpty { say("  paused: \(reason)") }
        }
        return 0
    }

    static func lookup(pool: PostgresPool, teamID: String, transferSub: String) async throws -> Int32 {
        let rows = try await pool.query("""
            SELECT coalesce(account_id::text, '-') AS account_id, external_user_id, team_id, matched_via,
                   coalesce(days_left::text, '-') AS days_left
            FROM siwa.account_by_transfer_sub(\(teamID), \(transferSub))
            """)
        guard let row = rows.first else {
            SIWAJobsCommand.fail("no account for this transfer_sub in team \(teamID)")
            return 1
        }
        say("account \(try row.decode("account_id", as: String.self)) external_user_id=\(try row.decode("external_user_id", as: String.self)) "
            + "team=\(try row.decode("team_id", as: String.self)) via=\(try row.decode("matched_via", as: String.self)) "
            + "days_left=\(try row.decode("days_left", as: String.self))")
        return 0
    }
}
