import Foundation
import Postgres

/// `JobStore` on PostgreSQL, on the tables of `QueueSchema` (schema `siwa`). Every value is a bind
/// parameter; the only SQL text not written here is a kind's `KindWrites` (constant identifiers and
/// effect statements).
public struct PostgresJobStore: JobStore {
    public let pool: PostgresPool
    /// The jobs this store's claims and backlog see (`JobScope`); the others are `outOfScopeJobs`.
    public let scope: JobScope

    public init(pool: PostgresPool, scope: JobScope = .everything) {
        self.pool = pool
        self.scope = scope
    }

    public func jobs(ids: [Int64]) async throws -> [JobRecord] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("SELECT id, kind, spec::text AS spec, state FROM siwa.jobs WHERE id = ANY(\(ids))")
        }
        return try rows.map { row in
            JobRecord(id: try row.decode("id"), kind: try row.decode("kind"),
                      spec: try row.decode("spec"), state: try row.decode("state", as: JobState.self))
        }
    }

    /// Renews `owner`'s leases on `itemIDs`: singly items' own leases, and the range leases that
    /// hold any of them (a range lease is matched by id range; a range that also spans another
    /// job's id in flight is merely renewed early). Returns how many singly items and ranges were
    /// renewed.
    public func extendLeases(owner: String, itemIDs: [Int64], lease: Duration) async throws -> Int {
        guard !itemIDs.isEmpty else { return 0 }
        let leaseSeconds = lease.seconds
        return try await pool.withConnection { conn in
            let singly = try await conn.execute(("""
                WITH held AS MATERIALIZED (
                    SELECT id, 'running'::text AS leased_state, \(owner)::text AS leased_by FROM unnest(\(itemIDs)::bigint[]) AS id
                ),
                -- Compared with the CTE's columns, not constants (see `complete`): items found by key.
                -- Rows a completion is writing now are skipped, not waited for: a renewal never
                -- waits, so it cannot deadlock with a completion locking the same items in another order.
                mine AS MATERIALIZED (
                    SELECT i.id, i.job_id FROM siwa.job_items i JOIN held h
                        ON i.id = h.id AND i.state = h.leased_state AND i.lease_owner = h.leased_by
                    FOR UPDATE OF i SKIP LOCKED
                )
                UPDATE siwa.job_items i SET lease_expires_at = now() + make_interval(secs => \(leaseSeconds))
                FROM mine m
                WHERE i.id = m.id AND i.job_id = m.job_id
                """ as SQL).reusingPlan())
            // Only leases that overlap the ids' span are tested id by id: the owner's finished
            // ranges, kept until `rescueExpired` deletes them, lie below it in a drain, and testing
            // each against every id in flight cost about 7 ms per renewal at C=64. A range lease is
            // waited for, not skipped: a completion of kept items holds its lease for the statement
            // (`keptSQL`), and at high concurrency one is nearly always running. Both lock leases in
            // id order, and this statement locks nothing else, so the two cannot deadlock.
            let low = itemIDs.min()!, high = itemIDs.max()!
            let ranges = try await conn.execute(("""
                WITH mine AS MATERIALIZED (
                    SELECT l.id FROM siwa.item_leases l
                    WHERE l.owner = \(owner) AND l.last_id >= \(low) AND l.first_id <= \(high)
                      AND EXISTS (SELECT FROM unnest(\(itemIDs)::bigint[]) AS x(id) WHERE x.id BETWEEN l.first_id AND l.last_id)
                    ORDER BY l.id
                    FOR NO KEY UPDATE OF l
                )
                UPDATE siwa.item_leases l SET expires_at = now() + make_interval(secs => \(leaseSeconds))
                FROM mine m WHERE l.id = m.id
                """ as SQL).reusingPlan())
            return singly + ranges
        }
    }

    public func pauseJob(id: Int64, reason: String) async throws -> Bool {
        try await pool.withConnection { conn in
            try await conn.transaction { tx in
                let n = try await tx.execute("""
                    UPDATE siwa.jobs SET state = 'paused', paused_reason = \(reason)
                    WHERE id = \(id) AND state = 'running'
                    """)
                if n > 0 {
                    try await tx.execute("""
                        INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                        VALUES ('worker', 'job.paused', \(id), jsonb_build_object('reason', \(reason)::text))
                        """)
                }
                return n > 0
            }
        }
    }

    public func completeFinishedJobs() async throws -> [Int64] {
        let rows = try await pool.withConnection { conn in
            // Items of a cancelled job that came back (a retry or a rescue after the cancel) are
            // cancelled too, so the job's counts reach done.
            // Only singly items come back; a range item still out belongs to its lease until it
            // completes or is rescued (then it is singly).
            try await conn.execute("""
                UPDATE siwa.job_items SET state = 'cancelled', finished_at = now(), claim_singly = false
                WHERE state = 'available' AND claim_singly
                  AND job_id = ANY(ARRAY(SELECT id FROM siwa.jobs WHERE state = 'cancelled'))
                """)
            // A completed job's range leases have nothing left: they go with it. Without JIT: the
            // per-lease probes of `ItemCounts` inflate the estimate (see `withoutJIT`).
            return try await conn.withoutJIT { try await $0.query("""
                WITH completed AS (
                    UPDATE siwa.jobs j SET state = 'completed', finished_at = now()
                    WHERE j.state = 'running' AND NOT \(unsafeSQL: ItemCounts.anyUnfinished(job: "j.id", cursor: "j.claim_cursor"))
                    RETURNING j.id, j.state
                ),
                drained AS (
                    DELETE FROM siwa.item_leases l USING completed c WHERE l.job_id = c.id AND c.state = 'completed'
                )
                SELECT id, state FROM completed
                """) }
        }
        // A trigger may hold a job back (e.g. a transfer whose canary never finished): only the
        // rows that really became completed count.
        return try rows.filter { try $0.decode("state", as: JobState.self) == .completed }.map { try $0.decode("id") }
    }

    public func pausedJobs(kinds: [String]) async throws -> [Int64: String] {
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
                SELECT id, coalesce(paused_reason, '') AS reason FROM siwa.jobs WHERE state = 'paused' AND kind = ANY(\(kinds))
                """)
        }
        var map: [Int64: String] = [:]
        for row in rows { map[try row.decode("id")] = try row.decode("reason") }
        return map
    }

    /// Due items: singly ones due now, and planned ones past their job's claim cursor; running:
    /// singly items leased, and planned ones handed out by range and not finished; scheduled and
    /// the next `run_at`: singly items' (retries). Every count goes through an index or the jobs'
    /// few lease rows (`ItemCounts`), never a scan of finished items: a drain's idle check on
    /// 3,000,000 finished items once took 360 ms of PostgreSQL CPU.
    public func backlog(kinds: [String]) async throws -> QueueBacklog {
        let rows = try await pool.queryWithoutJIT("""
                WITH live AS MATERIALIZED (
                    SELECT j.id, j.claim_cursor FROM siwa.jobs j WHERE j.state = 'running' AND j.kind = ANY(\(kinds))
                        AND \(scope.condition("j"))),
                counts AS (
                    SELECT \(unsafeSQL: ItemCounts.due(job: "l.id", cursor: "l.claim_cursor")) AS due_now,
                           \(unsafeSQL: ItemCounts.running(job: "l.id")) AS running,
                           \(unsafeSQL: ItemCounts.singlyScheduled(job: "l.id")) AS scheduled,
                           (SELECT min(i.run_at) FROM siwa.job_items i WHERE i.job_id = l.id AND i.claim_singly
                               AND i.state = 'available' AND i.run_at > now()) AS next_run_at
                    FROM live l)
                SELECT COALESCE(sum(due_now), 0)::bigint AS due_now, COALESCE(sum(running), 0)::bigint AS running,
                       min(next_run_at) AS next_run_at, COALESCE(sum(scheduled), 0)::bigint AS scheduled
                FROM counts
                """)
        guard let row = rows.first else { return QueueBacklog(dueNow: 0, running: 0, nextRunAt: nil) }
        return QueueBacklog(dueNow: try row.decode("due_now"), running: try row.decode("running"),
                            nextRunAt: try row.decode("next_run_at", as: Date?.self), scheduled: try row.decode("scheduled"))
    }

    public func openJobs(kinds: [String]) async throws -> [JobRecord] {
        try await openJobs(kinds: kinds, where: "TRUE")
    }

    public var outOfScopeReason: String { scope.reason }

    /// Running jobs of `kinds` with unfinished items that this store's `scope` leaves out.
    public func outOfScopeJobs(kinds: [String]) async throws -> [JobRecord] {
        guard scope.key != nil else { return [] }
        return try await openJobs(kinds: kinds, where: "NOT " + scope.condition("j"))
    }

    private func openJobs(kinds: [String], where condition: SQL) async throws -> [JobRecord] {
        guard !kinds.isEmpty else { return [] }
        let rows = try await pool.queryWithoutJIT("""
            SELECT j.id, j.kind, j.spec::text AS spec, j.state FROM siwa.jobs j
            WHERE j.state = 'running' AND j.kind = ANY(\(kinds)) AND \(condition)
              AND \(unsafeSQL: ItemCounts.anyUnfinished(job: "j.id", cursor: "j.claim_cursor"))
            ORDER BY j.id
            """)
        return try rows.map { row in
            JobRecord(id: try row.decode("id"), kind: try row.decode("kind"),
                      spec: try row.decode("spec"), state: try row.decode("state", as: JobState.self))
        }
    }
}
