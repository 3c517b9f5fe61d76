import Postgres

/// How long finished work is kept (`siwa-jobs prune`; README "Retention and job control").
public struct RetentionPolicy: Sendable, Equatable {
    /// Days after a job finished (completed or cancelled) before its items, results and result
    /// history may go. Default 30.
    public var jobDays: Int
    /// Days an audit row is kept. Default 400.
    public var auditDays: Int
    /// Days after a notification was processed before its raw payload (the JWT) is dropped. Default 7.
    public var payloadDays: Int

    public init(jobDays: Int = 30, auditDays: Int = 400, payloadDays: Int = 7) {
        self.jobDays = jobDays
        self.auditDays = auditDays
        self.payloadDays = payloadDays
    }
}

/// What one `prune` did (or, with `dryRun`, would do).
public struct PruneReport: Sendable, Equatable {
    /// One partition of job_items/results/result_history (`siwa.item_partitions`).
    public struct Partition: Sendable, Equatable {
        /// Its suffix, e.g. `j1234` (tables `job_items_j1234`, ...) or `legacy`.
        public let name: String
        /// Its jobs (all finished before the retention period).
        public let jobs: Int
        /// Its items when it was dropped (0 in a dry run: not counted, to stay cheap).
        public let items: Int
    }

    public var dryRun: Bool
    public var policy: RetentionPolicy
    /// Partitions dropped (dry run: that would be).
    public var dropped: [Partition] = []
    /// Partitions kept because a job in them is running or paused, finished within the period, or
    /// because job ids in their range may still be handed out (the newest partition).
    public var kept = 0
    /// Partitions that became busy while being dropped (a job was created in them meanwhile):
    /// attached again untouched; the next prune tries again.
    public var busy: [String] = []
    /// Summaries written for finished jobs that had none.
    public var summariesWritten = 0
    /// Audit rows older than the audit period, deleted.
    public var auditRowsDeleted = 0
    /// Raw notification payloads dropped.
    public var payloadsDropped = 0

    public init(dryRun: Bool, policy: RetentionPolicy) {
        self.dryRun = dryRun
        self.policy = policy
    }
}

/// Prunes finished work by dropping whole partitions (never DELETE on job_items or results), keeps
/// a summary of every job (`siwa.job_summaries`), trims the audit log and notification payloads.
/// Safe beside running workers: partitions are detached CONCURRENTLY (SHARE UPDATE EXCLUSIVE on
/// the parents: claims and completions go on), checked again, then dropped.
public struct Retention: Sendable {
    let pool: PostgresPool

    /// - Parameter pool: needs one connection (DETACH ... CONCURRENTLY runs outside a transaction).
    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// A partition as prune judges it.
    struct Candidate: Sendable {
        let name: String
        let lo: Int64
        let hi: Int64
        let jobs: Int
        let prunable: Bool
    }

    /// Runs every step; with `dryRun` only counts.
    /// - Throws: `DatabaseError` (a lock timeout is `.transient`: run prune again).
    public func prune(policy: RetentionPolicy = RetentionPolicy(), dryRun: Bool) async throws -> PruneReport {
        var report = PruneReport(dryRun: dryRun, policy: policy)
        if !dryRun { try await finalizePendingDetaches() }
        report.summariesWritten = try await writeMissingSummaries(dryRun: dryRun)
        for candidate in try await candidates(policy: policy) {
            guard candidate.prunable else {
                report.kept += 1
                continue
            }
            if dryRun {
                report.dropped.append(.init(name: candidate.name, jobs: candidate.jobs, items: 0))
            } else if let items = try await drop(candidate, policy: policy) {
                report.dropped.append(.init(name: candidate.name, jobs: candidate.jobs, items: items))
            } else {
                report.busy.append(candidate.name)
            }
        }
        report.auditRowsDeleted = try await pruneAudit(days: policy.auditDays, dryRun: dryRun)
        report.payloadsDropped = try await dropPayloads(days: policy.payloadDays, dryRun: dryRun)
        return report
    }

    /// Every partition, oldest first. Prunable: a later job exists (no new id can fall in its
    /// range) and every job in it finished more than `policy.jobDays` ago.
    func candidates(policy: RetentionPolicy) async throws -> [Candidate] {
        let rows = try await pool.query("""
            SELECT p.suffix, p.lo, p.hi,
                   (SELECT count(*)::int FROM siwa.jobs j WHERE j.id >= p.lo AND j.id < p.hi) AS jobs,
                   EXISTS (SELECT FROM siwa.jobs j WHERE j.id >= p.hi)
                   AND NOT EXISTS (SELECT FROM siwa.jobs j WHERE j.id >= p.lo AND j.id < p.hi
                                     AND NOT (j.state IN ('completed', 'cancelled')
                                              AND j.finished_at < now() - make_interval(days => \(policy.jobDays))))
                       AS prunable
            FROM siwa.item_partitions p
            ORDER BY p.lo
            """)
        return try rows.map { row in
            Candidate(name: try row.decode("suffix"), lo: try row.decode("lo"), hi: try row.decode("hi"),
                      jobs: try row.decode("jobs"), prunable: try row.decode("prunable"))
        }
    }

    /// Summaries for finished jobs that have none yet (every job finished since the last prune;
    /// `0025` dropped the trigger that wrote one at completion). A dropped partition's jobs are
    /// summarized again just before it goes (`drop`).
    func writeMissingSummaries(dryRun: Bool) async throws -> Int {
        let missing: SQL = """
            SELECT j.id FROM siwa.jobs j
            WHERE j.state IN ('completed', 'cancelled')
              AND NOT EXISTS (SELECT FROM siwa.job_summaries s WHERE s.job_id = j.id)
            """
        if dryRun {
            let rows = try await pool.query("SELECT count(*)::int AS n FROM (\(missing)) m")
            return try rows.first?.decode("n") ?? 0
        }
        return try await pool.query("SELECT siwa.summarize_job(m.id) FROM (\(missing)) m").count
    }
}
