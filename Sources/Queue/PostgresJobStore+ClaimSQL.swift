import Postgres

extension PostgresJobStore {
    /// Result columns of both claim statements: id, job_id, account_id, payload (text), attempt (the
    /// claimed attempt, 1-based), max_attempts, first_attempt_at, by_range.

    /// Singly items: per share its oldest due ones (run_at, id), locked `FOR UPDATE SKIP LOCKED`
    /// and leased on their own rows, only while the job is running.
    static func singlyStatement(_ shares: [ClaimShares.Share], owner: String, leaseSeconds: Double) -> SQL {
        // The shares' job ids: a custom plan reads only their partitions (README "Retention
        // and job control": job_items is partitioned by job id). The reused generic plan
        // cannot prune on an array, so the update joins the picked (id, job_id) pairs: each
        // row's lookup runs in its own partition only, however many partitions are kept.
        let jobIDs = shares.map(\.jobID)
        var picked = SQL(unsafeSQL: "")
        for (index, share) in shares.enumerated() {
            if index > 0 { picked.append(unsafeSQL: "\n    UNION ALL\n") }
            picked.append("""
                    SELECT id, job_id FROM (
                        SELECT i.id, i.job_id FROM siwa.job_items i
                        WHERE i.job_id = \(share.jobID) AND i.claim_singly AND i.state = 'available' AND i.run_at <= now()
                          AND EXISTS (SELECT FROM siwa.jobs j WHERE j.id = \(share.jobID) AND j.state = 'running')
                        ORDER BY i.run_at, i.id LIMIT \(share.take) FOR UPDATE OF i SKIP LOCKED) AS singly_\(unsafeSQL: String(index))
                """)
        }
        return ("""
            WITH picked AS MATERIALIZED (
            \(picked)
            )
            UPDATE siwa.job_items i
            SET state = 'running', attempt = i.attempt + 1, lease_owner = \(owner),
                lease_expires_at = now() + make_interval(secs => \(leaseSeconds)),
                first_attempt_at = COALESCE(i.first_attempt_at, now())
            FROM picked p
            WHERE i.job_id = ANY(\(jobIDs)) AND i.id = p.id AND i.job_id = p.job_id
            RETURNING i.id, i.job_id, i.account_id, i.payload::text AS payload, i.attempt::int AS attempt,
                      i.max_attempts::int AS max_attempts, i.first_attempt_at, false AS by_range
            """ as SQL).reusingPlan()
    }

    /// Planned items: per share (with its job's partition suffix) the job's next planned items in
    /// id order past its claim cursor. The cursor is read with the job's row locked (`FOR NO KEY
    /// UPDATE`): a second worker claiming the same job waits for the first to commit, then reads
    /// the moved cursor; no row (nothing taken) when the job is not running. The jobs' rows are
    /// locked in id order, the same in every claim, so claims of the same jobs cannot deadlock.
    /// The cursor moves to the last id taken and one `item_leases` row per job records the range,
    /// in the same statement. The items themselves are only read.
    static func rangeStatement(_ shares: [(share: ClaimShares.Share, partition: String?)], owner: String,
                               leaseSeconds: Double) -> SQL {
        var picked = SQL(unsafeSQL: "")
        for (index, entry) in shares.sorted(by: { $0.share.jobID < $1.share.jobID }).enumerated() {
            let share = entry.share
            let table = entry.partition.map { "siwa." + SQL.quoteIdentifier("job_items_" + $0) } ?? "siwa.job_items"
            if index > 0 { picked.append(unsafeSQL: "\n    UNION ALL\n") }
            // The inner limit is a literal (the share rounded up to a power of two) and the outer
            // one the bind: a generic plan then costs what a custom one does, and is reused.
            let bucket = String(dueCountCap(share.take))
            picked.append("""
                    SELECT * FROM (SELECT * FROM (
                        SELECT i.id, i.job_id, i.account_id, i.payload::text AS payload, i.max_attempts::int AS max_attempts
                        FROM \(unsafeSQL: table) i
                        WHERE i.job_id = \(share.jobID) AND NOT i.claim_singly AND i.state = 'available'
                          AND i.id > (SELECT j.claim_cursor FROM siwa.jobs j
                                      WHERE j.id = \(share.jobID) AND j.state = 'running' FOR NO KEY UPDATE)
                        ORDER BY i.id LIMIT \(unsafeSQL: bucket)) AS next_\(unsafeSQL: String(index))
                      ORDER BY id LIMIT \(share.take)) AS range_\(unsafeSQL: String(index))
                """)
        }
        return ("""
            WITH picked AS MATERIALIZED (
            \(picked)
            ),
            advanced AS (
                UPDATE siwa.jobs j SET claim_cursor = r.last_id
                FROM (SELECT job_id, max(id) AS last_id FROM picked GROUP BY job_id) r
                WHERE j.id = r.job_id
            ),
            range_leases AS (
                INSERT INTO siwa.item_leases (job_id, first_id, last_id, owner, expires_at)
                SELECT job_id, min(id), max(id), \(owner), now() + make_interval(secs => \(leaseSeconds))
                FROM picked GROUP BY job_id
            )
            SELECT id, job_id, account_id, payload, 1 AS attempt, max_attempts, now() AS first_attempt_at, true AS by_range
            FROM picked
            """ as SQL).reusingPlan()
    }
}
