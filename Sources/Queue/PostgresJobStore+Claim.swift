import Foundation
import Postgres

extension PostgresJobStore {
    /// Leases up to `limit` due items, most urgent jobs first and shared fairly among jobs of equal
    /// priority (`ClaimShares`), in two statements on one connection:
    ///
    /// 1. the runnable jobs of `kinds` with their priority and due items, counted up to `limit` on
    ///    the claim index (`job_items_claim_by_job`: job, run_at, id; one range each). A job alone
    ///    at the least urgent priority present is not counted: it takes whatever is left.
    /// 2. per job with a share, its oldest due items (run_at, id) up to its share, `FOR UPDATE SKIP
    ///    LOCKED`, then one update through the primary key. The shares are bind parameters, so each
    ///    range is planned with its real limit, and each job is checked to be still running in the
    ///    same statement.
    ///
    /// Items another worker locked in between are skipped, so a batch may come back smaller than
    /// its shares; the worker claims again at its next wake-up (the flusher's next batch at the latest).
    /// - Returns: the items, most urgent first.
    public func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem] {
        guard limit > 0 else { return [] }
        let leaseSeconds = lease.seconds
        let countCap = SQL(unsafeSQL: String(Self.dueCountCap(limit)))
        let (shares, rows) = try await pool.withConnection { conn -> ([ClaimShares.Share], [PostgresRow]) in
            let due = try await conn.query(("""
                SELECT r.id, r.priority::int AS priority,
                       CASE WHEN r.alone_last THEN \(countCap) ELSE
                           (SELECT count(*)::int FROM (
                                SELECT FROM siwa.job_items i
                                WHERE i.job_id = r.id AND i.state = 'available' AND i.run_at <= now()
                                ORDER BY i.run_at, i.id LIMIT \(countCap)) d)
                       END AS due
                FROM (SELECT j.id, j.priority,
                             count(*) OVER (PARTITION BY j.priority) = 1 AND j.priority = max(j.priority) OVER () AS alone_last
                      FROM siwa.jobs j WHERE j.state = 'running' AND j.kind = ANY(\(kinds))) r
                """ as SQL).reusingPlan())
            let jobs = try due.map { row in
                ClaimShares.DueJob(jobID: try row.decode("id"), priority: try row.decode("priority"),
                                   due: min(try row.decode("due", as: Int.self), limit))
            }
            let shares = ClaimShares.split(jobs, batch: limit)
            guard !shares.isEmpty else { return ([], []) }
            // The shares' job ids: a custom plan reads only their partitions (README "Retention
            // and job control": job_items is partitioned by job id). The reused generic plan
            // cannot prune on an array, so the update joins the picked (id, job_id) pairs: each
            // row's lookup runs in its own partition only, however many partitions are kept.
            let jobIDs = shares.map(\.jobID)
            let rows = try await conn.query(("""
                WITH picked AS MATERIALIZED (
                \(Self.oldestDue(shares))
                )
                UPDATE siwa.job_items i
                SET state = 'running', attempt = i.attempt + 1, lease_owner = \(owner),
                    lease_expires_at = now() + make_interval(secs => \(leaseSeconds)),
                    first_attempt_at = COALESCE(i.first_attempt_at, now())
                FROM picked p
                WHERE i.job_id = ANY(\(jobIDs)) AND i.id = p.id AND i.job_id = p.job_id
                RETURNING i.id, i.job_id, i.account_id, i.payload::text AS payload, i.attempt, i.max_attempts,
                          i.first_attempt_at
                """ as SQL).reusingPlan())
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
                priority: priorities[jobID] ?? JobPriority.mostUrgent)
        }
        return items.sorted { ($0.priority, $0.id) < ($1.priority, $1.id) }
    }

    /// The job-choice statement counts due items up to this literal, `limit` rounded up to a power
    /// of two (at least 64), and the claim clamps the counts to `limit`: its only bind is then the
    /// kinds, so PostgreSQL reuses one generic plan per connection and cap. With the limit as a
    /// bind it planned the statement anew on every claim (0.45 ms each, 11 times its run time;
    /// pg_stat_statements in a C=256 validation drain: 6% of PostgreSQL's CPU).
    static func dueCountCap(_ limit: Int) -> Int {
        var cap = 64
        while cap < limit { cap *= 2 }
        return cap
    }

    /// One locking range per share, joined by `UNION ALL` (each a subquery: a set operation
    /// cannot carry `FOR UPDATE` itself): the job's oldest due items, skipping those another
    /// worker holds, only while the job is running.
    static func oldestDue(_ shares: [ClaimShares.Share]) -> SQL {
        var sql = SQL(unsafeSQL: "")
        for (index, share) in shares.enumerated() {
            if index > 0 { sql.append(unsafeSQL: "\n    UNION ALL\n") }
            sql.append("""
                    SELECT id, job_id FROM (
                        SELECT i.id, i.job_id FROM siwa.job_items i
                        WHERE i.job_id = \(share.jobID) AND i.state = 'available' AND i.run_at <= now()
                          AND EXISTS (SELECT FROM siwa.jobs j WHERE j.id = \(share.jobID) AND j.state = 'running')
                        ORDER BY i.run_at, i.id LIMIT \(share.take) FOR UPDATE OF i SKIP LOCKED) AS share_\(unsafeSQL: String(index))
                """)
        }
        return sql
    }
}
