import Foundation
import Postgres

extension PostgresJobStore {
    /// Leases up to `limit` due items, most urgent jobs first and shared fairly among jobs of equal
    /// priority (`ClaimShares`), on one connection (sql/0026_range_claims.sql):
    ///
    /// 1. the runnable jobs of `kinds` in `scope` with their priority, partition and due items, counted up to
    ///    `limit` apart: singly items on `job_items_claim_singly` (job, run_at, id), planned items
    ///    past the job's claim cursor on the primary key. A job alone at the least urgent priority
    ///    present is not counted: it takes whatever is left.
    /// 2. when a share's job has singly items due: its oldest (run_at, id), `FOR UPDATE SKIP
    ///    LOCKED`, each leased on its own row (state running, attempt + 1);
    /// 3. when it has planned items left: the rest of its share, its next planned items by id
    ///    past `jobs.claim_cursor` (the job's row locked `FOR NO KEY UPDATE`, so two workers never
    ///    take the same range). The cursor moves past them and one `item_leases` row records the
    ///    range; the items are not written and come back with attempt 1 and `claimedByRange`.
    ///
    /// Each job is checked to be still running in the same statement that leases its items. The
    /// range statement names each job's partition, so PostgreSQL plans it once per connection
    /// (a generic plan over the parent was never chosen: it costs every partition's scan).
    /// Singly items another worker locked in between are skipped, so a batch may come back smaller
    /// than its shares; the worker claims again at its next wake-up. When the range statement
    /// fails after singly items were leased, those are returned (the error shows at the next claim).
    /// - Returns: the items, most urgent first.
    public func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem] {
        guard limit > 0 else { return [] }
        let leaseSeconds = lease.seconds
        let (shares, rows) = try await pool.withConnection { conn -> ([ClaimShares.Share], [PostgresRow]) in
            let jobs = try await Self.dueJobs(kinds: kinds, scope: scope, limit: limit, on: conn)
            let shares = ClaimShares.split(jobs.map(\.due), batch: limit)
            guard !shares.isEmpty else { return ([], []) }
            let byID = Dictionary(uniqueKeysWithValues: jobs.map { ($0.due.jobID, $0) })
            var rows: [PostgresRow] = []
            var takenSingly: [Int64: Int] = [:]
            let singlyShares = shares.filter { (byID[$0.jobID]?.singlyDue ?? 0) > 0 }
            if !singlyShares.isEmpty {
                rows = try await conn.query(Self.singlyStatement(singlyShares, owner: owner, leaseSeconds: leaseSeconds))
                for row in rows { takenSingly[try row.decode("job_id", as: Int64.self), default: 0] += 1 }
            }
            let rangedShares = shares.compactMap { share -> (ClaimShares.Share, String?)? in
                guard let job = byID[share.jobID], job.plannedAhead > 0 else { return nil }
                let rest = share.take - (takenSingly[share.jobID] ?? 0)
                return rest > 0 ? (ClaimShares.Share(jobID: share.jobID, priority: share.priority, take: rest), job.partition) : nil
            }
            if !rangedShares.isEmpty {
                do {
                    rows += try await conn.query(Self.rangeStatement(rangedShares, owner: owner, leaseSeconds: leaseSeconds))
                } catch where !rows.isEmpty {
                    return (shares, rows)
                }
            }
            return (shares, rows)
        }
        let priorities = Dictionary(uniqueKeysWithValues: shares.map { ($0.jobID, $0.priority) })
        let items = try rows.map { row in
            let jobID: Int64 = try row.decode("job_id")
            return ClaimedItem(
                id: try row.decode("id"), jobID: jobID,
                accountID: try row.decode("account_id", as: Int64?.self),
                payload: try row.decode("payload", as: String?.self),
                attempt: try row.decode("attempt"), maxAttempts: try row.decode("max_attempts"),
                firstAttemptAt: try row.decode("first_attempt_at", as: Date?.self),
                priority: priorities[jobID] ?? JobPriority.mostUrgent,
                claimedByRange: try row.decode("by_range"))
        }
        return items.sorted { ($0.priority, $0.id) < ($1.priority, $1.id) }
    }

    /// A runnable job as the claim's first statement sees it.
    struct ClaimableJob {
        let due: ClaimShares.DueJob
        /// Singly items due now and planned items not handed out yet, each counted up to the cap.
        let singlyDue: Int, plannedAhead: Int
        /// Its `job_items` partition's suffix (`siwa.item_partitions`), nil when none is recorded.
        let partition: String?
    }

    /// The job-choice statement. Each count is ordered as its index is, so the scan stops at the
    /// cap (a bitmap scan of the key would read every planned item of the job). It counts due items up to a literal, `limit` rounded up to a
    /// power of two (at least 64), and the claim clamps the counts to `limit`: its only binds are
    /// then the kinds and the scope, both fixed for a worker, so PostgreSQL reuses one generic plan per connection and cap. With the limit
    /// as a bind it planned the statement anew on every claim (0.45 ms each, 11 times its run time;
    /// pg_stat_statements in a C=256 validation drain: 6% of PostgreSQL's CPU).
    static func dueJobs(kinds: [String], scope: JobScope, limit: Int, on conn: PostgresConnection) async throws -> [ClaimableJob] {
        let cap = SQL(unsafeSQL: String(dueCountCap(limit)))
        let rows = try await conn.query(("""
            SELECT r.id, r.priority::int AS priority, r.alone_last,
                   (SELECT p.suffix FROM siwa.item_partitions p WHERE p.lo <= r.id AND r.id < p.hi) AS part,
                   (SELECT count(*)::int FROM (
                        SELECT FROM siwa.job_items i
                        WHERE i.job_id = r.id AND i.claim_singly AND i.state = 'available' AND i.run_at <= now()
                        ORDER BY i.run_at, i.id LIMIT \(cap)) d) AS singly_due,
                   (SELECT count(*)::int FROM (
                        SELECT FROM siwa.job_items i
                        WHERE i.job_id = r.id AND i.id > r.claim_cursor AND NOT i.claim_singly AND i.state = 'available'
                        ORDER BY i.id LIMIT \(cap)) d) AS planned_ahead
            FROM (SELECT j.id, j.priority, j.claim_cursor,
                         count(*) OVER (PARTITION BY j.priority) = 1 AND j.priority = max(j.priority) OVER () AS alone_last
                  FROM siwa.jobs j WHERE j.state = 'running' AND j.kind = ANY(\(kinds)) AND \(scope.condition("j"))) r
            """ as SQL).reusingPlan())
        return try rows.compactMap { row in
            let singly: Int = try row.decode("singly_due"), planned: Int = try row.decode("planned_ahead")
            guard singly + planned > 0 else { return nil }
            let due = try row.decode("alone_last", as: Bool.self) ? limit : min(singly + planned, limit)
            return ClaimableJob(due: ClaimShares.DueJob(jobID: try row.decode("id"), priority: try row.decode("priority"), due: due),
                                singlyDue: singly, plannedAhead: planned, partition: try row.decode("part", as: String?.self))
        }
    }

    /// See `dueJobs`.
    static func dueCountCap(_ limit: Int) -> Int {
        var cap = 64
        while cap < limit { cap *= 2 }
        return cap
    }
}
