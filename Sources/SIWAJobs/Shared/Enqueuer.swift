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
public struct Enqueuer: Sendable {
    public static let channel = "siwa_jobs"
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Plans refresh-token validation for accounts of one team and client whose token was not
    /// checked in the last 24 hours (Apple allows validation at most once a day), that still hold a
    /// token not already known invalid, and that are neither deleted nor revoked.
    /// Throws `EnqueueError` when such a job is already running or paused for that client.
    public func enqueueRefreshValidation(teamID: String, clientID: String, createdBy: String,
                                         maxAttempts: Int = 5) async throws -> EnqueuedJob {
        let spec = ClientJobSpec(teamID: teamID, clientID: clientID)
        let uniqueKey = "refresh-validation:\(teamID):\(clientID)"
        return try await plan(kind: RefreshValidationHandler.kind, spec: spec, uniqueKey: uniqueKey, createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, account_id, max_attempts)
            SELECT \(jobID), a.id, \(maxAttempts)
            FROM siwa.accounts a
            WHERE a.team_id = \(teamID) AND a.client_id = \(clientID)
              AND a.refresh_token_ciphertext IS NOT NULL
              AND a.deleted_at IS NULL AND a.consent_revoked_at IS NULL
              AND a.token_status NOT IN ('invalid', 'revoked')
              AND (a.token_checked_at IS NULL OR a.token_checked_at < now() - interval '24 hours')
            ORDER BY a.id
            """
        }
    }

    /// Plans `items` no-op items (queue benchmark).
    public func enqueueNoop(items: Int, createdBy: String) async throws -> EnqueuedJob {
        try await plan(kind: NoopHandler.kind, spec: EmptyJobSpec(), uniqueKey: nil, createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, payload, max_attempts)
            SELECT \(jobID), jsonb_build_object('n', g), 3 FROM generate_series(1, \(items)) g
            """
        }
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
