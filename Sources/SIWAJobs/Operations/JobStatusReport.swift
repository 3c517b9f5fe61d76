import Postgres

/// One job's progress, from the `siwa.job_progress` view.
public struct JobProgress: Sendable, Equatable {
    public var jobID: Int64
    public var kind: String
    /// `running`, `paused`, `completed`, `cancelled`.
    public var state: String
    /// Why the job is paused; nil when it is not.
    public var pausedReason: String?
    public var items = 0, available = 0, running = 0, succeeded = 0, failed = 0, discarded = 0, terminal = 0
    /// Refresh-token checks: tokens found valid, and found invalid (revoked).
    public var valid = 0, invalid = 0
    /// Attempts rescheduled.
    public var retried = 0
    /// Seconds from the job's creation to its last result (0 before the first).
    public var elapsedSeconds = 0.0
    /// The team and client its spec names (refresh validations, revocation sweeps, sign-ins,
    /// transfers); nil for a kind whose spec names none.
    public var teamID: String?, clientID: String?

    public init(jobID: Int64, kind: String, state: String) {
        self.jobID = jobID
        self.kind = kind
        self.state = state
    }

    /// True when every item is terminal and the valid/invalid counts equal the sandbox's seeded
    /// truth (`SandboxAdminClient.truth`): the demo's end-to-end check.
    public func matches(truth: (valid: Int, revoked: Int)) -> Bool {
        valid == truth.valid && invalid == truth.revoked && terminal == items
    }
}

/// Reads job progress for `siwa-jobs status`.
public struct JobStatusReport: Sendable {
    private let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Every job (or only `jobID`), by id. An unknown `jobID` gives an empty list.
    /// - Throws: `DatabaseError`.
    public func jobs(jobID: Int64? = nil) async throws -> [JobProgress] {
        let filter: SQL = jobID.map { "WHERE p.job_id = \($0)" } ?? "WHERE true"
        let rows = try await pool.query("""
            SELECT p.job_id, p.kind, p.job_state, coalesce(p.paused_reason, '') AS paused_reason, p.items, p.available, p.running,
                   p.succeeded, p.failed, p.discarded, p.terminal, p.valid, p.invalid, p.retried,
                   coalesce(extract(epoch FROM p.last_result_at - p.created_at), 0)::float8 AS elapsed_s,
                   j.spec->>'team_id' AS team_id, j.spec->>'client_id' AS client_id
            FROM siwa.job_progress p JOIN siwa.jobs j ON j.id = p.job_id
            """ + " " + filter + " ORDER BY p.job_id")
        return try rows.map { row in
            var job = JobProgress(jobID: try row.decode("job_id"), kind: try row.decode("kind"), state: try row.decode("job_state"))
            let reason: String = try row.decode("paused_reason")
            job.pausedReason = reason.isEmpty ? nil : reason
            job.items = try row.decode("items")
            job.available = try row.decode("available")
            job.running = try row.decode("running")
            job.succeeded = try row.decode("succeeded")
            job.failed = try row.decode("failed")
            job.discarded = try row.decode("discarded")
            job.terminal = try row.decode("terminal")
            job.valid = try row.decode("valid")
            job.invalid = try row.decode("invalid")
            job.retried = try row.decode("retried")
            job.elapsedSeconds = try row.decode("elapsed_s")
            job.teamID = try row.decode("team_id", as: String?.self)
            job.clientID = try row.decode("client_id", as: String?.self)
            return job
        }
    }
}
