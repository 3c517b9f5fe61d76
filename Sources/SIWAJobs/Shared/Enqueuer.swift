import Clocks
import Postgres

/// A job that was planned (or found already active): its id and how many items it has.
public struct EnqueuedJob: Sendable, Equatable {
    public let jobID: Int64
    public let items: Int
    /// True when no job was created because one for the same team and client is already running
    /// or paused: `jobID` is that job and `items` its item count. Not an error: the worker drains it.
    public let alreadyActive: Bool
    /// The safety stop armed for the job (refresh validation, revocation sweep); nil when off.
    public let safetyStop: SafetyStopPlan?
    /// The job's priority (`JobPriority`: 0 the most urgent … 9 the least).
    public let priority: Int

    init(jobID: Int64, items: Int, priority: Int, alreadyActive: Bool = false, safetyStop: SafetyStopPlan? = nil) {
        self.jobID = jobID
        self.items = items
        self.priority = priority
        self.alreadyActive = alreadyActive
        self.safetyStop = safetyStop
    }
}

/// Planning failed for a reason the operator can act on.
public struct EnqueueError: Error, CustomStringConvertible, Sendable {
    public enum Reason: Sendable, Equatable {
        /// The queue or the job's state refuses it (e.g. a transfer export already active).
        case refused
        /// The team or client has no account at all: most likely a typo in `--team-id` or
        /// `--client-id`; the message names it and what is known.
        case likelyTypo
    }

    public let message: String
    public let reason: Reason
    public var description: String { message }

    public init(message: String, reason: Reason = .refused) {
        self.message = message
        self.reason = reason
    }
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

    /// What `plan` does when a job with the same unique key is already running or paused.
    enum WhenActive {
        /// Return that job (`EnqueuedJob.alreadyActive`): cron's nightly jobs.
        case report
        /// Throw `EnqueueError` telling ops to let it finish, resume or cancel it.
        case refuse
    }

    /// Options of one `plan` call beyond the items.
    struct PlanOptions: Sendable {
        /// The job's priority (`JobPriority`), already checked (`Enqueuer.priority(_:kind:)`).
        var priority: Int
        var uniqueKey: String?
        var whenActive: WhenActive = .refuse
        /// Roll back and return nil when no item is planned (no empty job is created).
        var skipEmpty = false
        /// A transaction-scoped advisory lock taken before anything else (see `PlanLock`).
        var lock: String?
        /// Arms a safety stop on the new job (after its items are planned).
        var safetyStop: SafetyStopArming?
    }

    private struct NothingPlanned: Error {}

    /// Creates a job of `kind` with `spec` (stored as its JSON), plans its items with `items`, and
    /// notifies workers, in one transaction. Because the job is invisible until that transaction
    /// commits, `items` may insert them with `claim_singly` false, to be claimed by range (see
    /// sql/0026_range_claims.sql); items added to a job later must keep the default (true).
    /// - Returns: the job; nil when `options.skipEmpty` and no item was planned (nothing written).
    /// - Throws: `EnqueueError` when a job with the unique key is active and `whenActive` is
    ///   `.refuse`; `DatabaseError`.
    func plan(kind: String, spec: some JobSpec, options: PlanOptions, createdBy: String,
              items: @Sendable (Int64) -> SQL) async throws -> EnqueuedJob? {
        let spec = spec.json
        for _ in 0..<3 {
            do {
                let job = try await pool.withConnection { conn in
                    try await conn.transaction { tx in
                        if let lock = options.lock { try await PlanLock.take(lock, tx) }
                        let rows = try await tx.query("""
                            INSERT INTO siwa.jobs (kind, spec, unique_key, created_by, priority)
                            VALUES (\(kind), \(spec)::jsonb, \(options.uniqueKey), \(createdBy), \(options.priority))
                            RETURNING id
                            """)
                        guard let jobID: Int64 = try rows.first?.decode("id") else {
                            throw EnqueueError(message: "creating the job returned no id")
                        }
                        let count = try await tx.execute(items(jobID))
                        if count == 0 && options.skipEmpty { throw NothingPlanned() }
                        try await tx.execute("UPDATE siwa.jobs SET item_count = \(count) WHERE id = \(jobID)")
                        let safety = try await options.safetyStop?.arm(jobID: jobID, items: count, uniqueKey: options.uniqueKey, tx)
                        try await tx.execute("""
                            INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                            VALUES (\(createdBy), 'job.enqueued', \(jobID), jsonb_build_object('kind', \(kind)::text, 'items', \(count)::int,
                                                                                             'priority', \(options.priority)::int))
                            """)
                        try await tx.execute("SELECT pg_notify(\(Self.channel), \(kind))")
                        return EnqueuedJob(jobID: jobID, items: count, priority: options.priority, safetyStop: safety)
                    }
                }
                await analyzePartition(of: job)
                return job
            } catch is NothingPlanned {
                return nil
            } catch let error as DatabaseError where error.isUniqueViolation {
                // The active job may finish between the refusal and the lookup: then plan again.
                guard let active = try await activeJob(uniqueKey: options.uniqueKey) else { continue }
                guard options.whenActive == .report else {
                    throw EnqueueError(message: "a \(kind) job for this client is already active (job \(active.id)); "
                        + "let it finish, or resume or cancel it first")
                }
                return EnqueuedJob(jobID: active.id, items: active.items, priority: active.priority, alreadyActive: true)
            }
        }
        throw EnqueueError(message: "a \(kind) job for this client kept appearing and finishing while planning; run enqueue again")
    }

    /// `plan` refusing an active job and creating an empty one (transfers, no-op, notifications):
    /// a transfer's empty job completes at once and `transfer status` shows it (README "Safety
    /// stops and cron").
    /// - Throws: also `EnqueueError` for a `priority` outside `JobPriority.range` (nil: the kind's default).
    func plan(kind: String, spec: some JobSpec, priority: Int?, uniqueKey: String?, lock: String? = nil, createdBy: String,
              items: @Sendable (Int64) -> SQL) async throws -> EnqueuedJob {
        let options = PlanOptions(priority: try Self.priority(priority, kind: kind), uniqueKey: uniqueKey, whenActive: .refuse,
                                  lock: lock)
        guard let job = try await plan(kind: kind, spec: spec, options: options, createdBy: createdBy, items: items) else {
            throw EnqueueError(message: "planning the \(kind) job created no job")
        }
        return job
    }

    /// Plans a client job of `kind` (spec `ClientJobSpec`, at most one active per team and client):
    /// one item per account of `teamID`/`clientID` that still holds a refresh token and matches
    /// `accounts`, a predicate on `siwa.accounts a`, in account id order. An active job for the
    /// client is returned as `alreadyActive`; no job is created when no account is due.
    /// - Returns: nil when no account is due (nothing is written).
    /// - Throws: `EnqueueError` `.likelyTypo` when the team or the client has no account at all, or
    ///   for a `priority` outside `JobPriority.range` (nil: the kind's default).
    func planClientAccounts(kind: String, teamID: String, clientID: String, createdBy: String, maxAttempts: Int,
                            priority: Int?, safetyStop: SafetyStopArming?, accounts: SQL) async throws -> EnqueuedJob? {
        let spec = ClientJobSpec(teamID: teamID, clientID: clientID)
        let options = PlanOptions(priority: try Self.priority(priority, kind: kind), uniqueKey: "\(kind):\(teamID):\(clientID)",
                                  whenActive: .report, skipEmpty: true, safetyStop: safetyStop)
        let job = try await plan(kind: kind, spec: spec, options: options, createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, account_id, max_attempts, claim_singly)
            SELECT \(jobID), a.id, \(maxAttempts), false
            FROM siwa.accounts a
            WHERE a.team_id = \(teamID) AND a.client_id = \(clientID)
              AND a.refresh_token_ciphertext IS NOT NULL
              AND (\(accounts))
            ORDER BY a.id
            """
        }
        if job == nil { try await requireKnownTarget(teamID: teamID, clientID: clientID) }
        return job
    }

    private func activeJob(uniqueKey: String?) async throws -> (id: Int64, items: Int, priority: Int)? {
        guard let uniqueKey else { return nil }
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id, item_count, priority::int AS priority FROM siwa.jobs
                WHERE unique_key = \(uniqueKey) AND state IN ('running', 'paused')
                """)
        }
        guard let row = rows.first else { return nil }
        return (try row.decode("id"), try row.decode("item_count"), try row.decode("priority"))
    }
}
