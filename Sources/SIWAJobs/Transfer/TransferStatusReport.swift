import Postgres

/// One transfer job's window, canary and item counts, from the `siwa.transfer_status` view.
public struct TransferJobStatus: Sendable, Equatable {
    public var jobID: Int64
    /// `export` (sending team) or `import` (recipient team).
    public var direction: String
    public var teamID: String
    public var clientID: String
    /// The other team: the target of an export, the source of an import (nil when not known).
    public var peerTeamID: String?
    /// `YYYY-MM-DD`.
    public var transferDate: String
    /// `YYYY-MM-DD`: the day the 60-day migration window closes.
    public var windowClosesOn: String
    /// Days until the window closes; negative once it has closed.
    public var daysLeft: Int
    public var canarySize = 0, canaryRemaining = 0, canarySucceeded = 0
    /// The canary gate was opened (the rest of the items planned).
    public var released = false
    public var jobState: String
    public var pausedReason: String?
    public var items = 0, succeeded = 0, failed = 0, discarded = 0, available = 0, running = 0

    public init(jobID: Int64, direction: String, teamID: String, clientID: String, transferDate: String,
                windowClosesOn: String, daysLeft: Int, jobState: String) {
        self.jobID = jobID
        self.direction = direction
        self.teamID = teamID
        self.clientID = clientID
        self.transferDate = transferDate
        self.windowClosesOn = windowClosesOn
        self.daysLeft = daysLeft
        self.jobState = jobState
    }
}

/// The account a `transfer_sub` maps to, from `siwa.account_by_transfer_sub`.
public struct TransferLookup: Sendable, Equatable {
    /// nil when the row is an import not yet matched to an account.
    public var accountID: Int64?
    public var externalUserID: String
    public var teamID: String
    /// How it was matched, e.g. `export` or `import`.
    public var matchedVia: String
    /// Days left in the migration window, when known.
    public var daysLeft: Int?
}

/// Reads for `transfer status` and `transfer lookup`.
public struct TransferStatusReport: Sendable {
    private let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Every transfer job (or only `jobID`), by id; empty when there is none.
    /// - Throws: `DatabaseError`.
    public func jobs(jobID: Int64? = nil) async throws -> [TransferJobStatus] {
        let filter: SQL = jobID.map { "WHERE job_id = \($0)" } ?? "WHERE true"
        let rows = try await pool.query("""
            SELECT job_id, direction, team_id, client_id, coalesce(peer_team_id, '') AS peer, transfer_date::text AS day,
                   window_closes_on::text AS closes, days_left, canary_size, canary_remaining, canary_succeeded,
                   released_at IS NOT NULL AS released, job_state, coalesce(paused_reason, '') AS paused_reason,
                   items, succeeded, failed, discarded, available, running
            FROM siwa.transfer_status
            """ + " " + filter + " ORDER BY job_id")
        return try rows.map { row in
            var job = TransferJobStatus(
                jobID: try row.decode("job_id"), direction: try row.decode("direction"), teamID: try row.decode("team_id"),
                clientID: try row.decode("client_id"), transferDate: try row.decode("day"),
                windowClosesOn: try row.decode("closes"), daysLeft: try row.decode("days_left"),
                jobState: try row.decode("job_state"))
            let peer: String = try row.decode("peer")
            job.peerTeamID = peer.isEmpty ? nil : peer
            let reason: String = try row.decode("paused_reason")
            job.pausedReason = reason.isEmpty ? nil : reason
            job.canarySize = try row.decode("canary_size")
            job.canaryRemaining = try row.decode("canary_remaining")
            job.canarySucceeded = try row.decode("canary_succeeded")
            job.released = try row.decode("released")
            job.items = try row.decode("items")
            job.succeeded = try row.decode("succeeded")
            job.failed = try row.decode("failed")
            job.discarded = try row.decode("discarded")
            job.available = try row.decode("available")
            job.running = try row.decode("running")
            return job
        }
    }

    /// The account for `transferSub` in `teamID`, or nil.
    /// - Throws: `DatabaseError`.
    public func lookup(teamID: String, transferSub: String) async throws -> TransferLookup? {
        let rows = try await pool.query("""
            SELECT account_id, external_user_id, team_id, matched_via, days_left
            FROM siwa.account_by_transfer_sub(\(teamID), \(transferSub))
            """)
        guard let row = rows.first else { return nil }
        return TransferLookup(accountID: try row.decode("account_id"), externalUserID: try row.decode("external_user_id"),
                              teamID: try row.decode("team_id"), matchedVia: try row.decode("matched_via"),
                              daysLeft: try row.decode("days_left"))
    }
}
