import Clocks
import Postgres

/// A job that was planned: its id and how many items it got.
public struct EnqueuedJob: Sendable, Equatable {
    public let jobID: Int64
    public let items: Int
}

/// Planning failed for a reason the operator can act on.
public struct EnqueueError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// Creates jobs and plans their items with set-based SQL, in one transaction, then sends one
/// NOTIFY on channel `siwa_jobs` so idle workers wake at once.
///
/// This file holds the machinery every kind shares (`plan`, the active-job lookup); each kind's
/// planner is an extension in its own folder (`Enqueuer+RefreshValidation`, `+RevocationSweep`,
/// `+Transfer`, `+Notifications`, `+Noop`).
public struct Enqueuer: Sendable {
    public static let channel = "siwa_jobs"
    let pool: PostgresPool
    /// The time planners judge by (the transfer window's day); SQL timestamps use the server's `now()`.
    let clock: any WallClock

    /// - Parameters:
    ///   - pool: where jobs are created; each plan takes one connection for its transaction.
    ///   - clock: the time the transfer planners check the 60-day window against.
    public init(pool: PostgresPool, clock: any WallClock) {
        self.pool = pool
        self.clock = clock
    }

    /// Creates a job of `kind` with `spec` (stored as its JSON), plans its items with `items`, and
    /// notifies workers, in one transaction.
    func plan(kind: String, spec: some JobSpec, uniqueKey: String?, createdBy: String,
              items: @Sendable (Int64) -> SQL) async throws -> EnqueuedJob {
        let spec = spec.json
        do {
            return try await pool.withConnection { conn in
                try await conn.transaction { tx in
                    let rows = try await tx.query("""
                        INSERT INTO siwa.jobs (kind, spec, unique_key, created_by)
                        VALUES (\(kind), \(spec)::jsonb, \(uniqueKey), \(createdBy))
                        RETURNING id
                        """)
                    guard let jobID: Int64 = try rows.first?.decode("id") else {
                        throw EnqueueError(message: "creating the job returned no id")
                    }
                    let count = try await tx.execute(items(jobID))
                    try await tx.execute("UPDATE siwa.jobs SET item_count = \(count) WHERE id = \(jobID)")
                    try await tx.execute("""
                        INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                        VALUES (\(createdBy), 'job.enqueued', \(jobID), jsonb_build_object('kind', \(kind)::text, 'items', \(count)::int))
                        """)
                    try await tx.execute("SELECT pg_notify(\(Self.channel), \(kind))")
                    return EnqueuedJob(jobID: jobID, items: count)
                }
            }
        } catch let error as DatabaseError where error.isUniqueViolation {
            let active = try await activeJob(uniqueKey: uniqueKey)
            throw EnqueueError(message: "a \(kind) job for this client is already active (job \(active.map(String.init) ?? "?")); "
                + "let it finish, or resume or cancel it first")
        }
    }

    /// Plans a client job of `kind` (spec `ClientJobSpec`, at most one active per team and client):
    /// one item per account of `teamID`/`clientID` that still holds a refresh token and matches
    /// `accounts`, a predicate on `siwa.accounts a`, in account id order.
    /// - Throws: `EnqueueError` when such a job is already running or paused for that client.
    func planClientAccounts(kind: String, teamID: String, clientID: String, createdBy: String, maxAttempts: Int,
                            accounts: SQL) async throws -> EnqueuedJob {
        let spec = ClientJobSpec(teamID: teamID, clientID: clientID)
        return try await plan(kind: kind, spec: spec, uniqueKey: "\(kind):\(teamID):\(clientID)", createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, account_id, max_attempts)
            SELECT \(jobID), a.id, \(maxAttempts)
            FROM siwa.accounts a
            WHERE a.team_id = \(teamID) AND a.client_id = \(clientID)
              AND a.refresh_token_ciphertext IS NOT NULL
              AND (\(accounts))
            ORDER BY a.id
            """
        }
    }

    private func activeJob(uniqueKey: String?) async throws -> Int64? {
        guard let uniqueKey else { return nil }
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id FROM siwa.jobs WHERE unique_key = \(uniqueKey) AND state IN ('running', 'paused')
                """)
        }
        return try rows.first?.decode("id")
    }
}
