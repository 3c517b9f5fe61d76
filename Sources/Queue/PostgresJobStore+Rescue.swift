import Postgres

extension PostgresJobStore {
    /// Expired leases, singly and by range: their unfinished items go back to available now as
    /// singly items (the worker died, not the item), or are discarded with a result row when the
    /// attempt that was running was the last and the first attempt is older than `retryBudget` (an
    /// item without a first-attempt time counts as older; a range's items started when the range
    /// was claimed). Compare-and-set on the lease, so an item completed meanwhile is untouched;
    /// `sparing`'s leases are skipped. Range leases with nothing left unfinished are deleted,
    /// whoever holds them. Three steps, each on its own: singly leases, range leases (two
    /// statements in one transaction), the finished ranges; none waits for a lock. The last two
    /// run without JIT (`withoutJIT`): their per-lease probes make PostgreSQL's estimate large
    /// enough to compile them on every run.
    public func rescueExpired(limit: Int, sparing: String?, retryBudget: Duration) async throws -> RescueReport {
        let budgetSeconds = retryBudget.seconds
        return try await pool.withConnection { conn in
            let singly = try await conn.query(Self.rescueSingly(limit: limit, sparing: sparing, budgetSeconds: budgetSeconds))
            // One transaction: the leases first, in a statement of their own, so the next
            // statement's snapshot holds every result a completion wrote under them before they
            // were locked.
            let ranged: [PostgresRow] = try await conn.withoutJIT { tx in
                let locked = try await tx.query(Self.expiredRanges(limit: limit, sparing: sparing))
                let leases = try locked.map { try $0.decode("id", as: Int64.self) }
                guard !leases.isEmpty else { return [] }
                return try await tx.query(Self.rescueRanges(leases: leases, budgetSeconds: budgetSeconds))
            }
            _ = try await conn.withoutJIT { try await $0.execute("""
                DELETE FROM siwa.item_leases l
                WHERE l.id IN (SELECT x.id FROM siwa.item_leases x
                               WHERE x.created_at < now() - interval '1 second' AND NOT \(unsafeSQL: ItemCounts.rangeHasUnfinished(lease: "x"))
                               FOR UPDATE SKIP LOCKED)
                """) }
            var report = RescueReport(retried: 0, discarded: 0)
            for row in singly + ranged {
                report.retried += try row.decode("retried", as: Int.self)
                report.discarded += try row.decode("discarded", as: Int.self)
            }
            return report
        }
    }

    /// Expired leases of singly items (state running), oldest first, `FOR UPDATE SKIP LOCKED`.
    static func rescueSingly(limit: Int, sparing: String?, budgetSeconds: Double) -> SQL {
        """
        WITH expired AS MATERIALIZED (
            SELECT id, job_id, (attempt >= max_attempts AND (first_attempt_at IS NULL
                        OR first_attempt_at <= now() - make_interval(secs => \(budgetSeconds)))) AS spent
            FROM siwa.job_items
            WHERE state = 'running' AND lease_expires_at < now() AND lease_owner IS DISTINCT FROM \(sparing)
            ORDER BY lease_expires_at
            LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
        ),
        moved AS (
            UPDATE siwa.job_items i
            SET state = CASE WHEN e.spent THEN 'discarded' ELSE 'available' END,
                claim_singly = NOT e.spent,
                run_at = now(),
                lease_owner = NULL,
                lease_expires_at = NULL,
                last_error = 'lease expired: worker lost while the item was in flight',
                finished_at = CASE WHEN e.spent THEN now() END
            FROM expired e
            WHERE i.id = e.id AND i.job_id = e.job_id AND i.state = 'running' AND i.lease_expires_at < now()
            RETURNING i.id, i.job_id, i.account_id, i.state, i.attempt
        ),
        \(discardedResults)
        SELECT count(*) FILTER (WHERE state = 'available') AS retried,
               count(*) FILTER (WHERE state = 'discarded') AS discarded
        FROM moved
        """
    }

    /// Expired range leases, oldest first, locked `FOR UPDATE SKIP LOCKED`: a lease a completion
    /// holds `FOR NO KEY UPDATE` right now (its kept items, `KindWrites.keepsSucceededRangeItems`)
    /// is left for the next rescue.
    static func expiredRanges(limit: Int, sparing: String?) -> SQL {
        """
        SELECT id FROM siwa.item_leases
        WHERE expires_at < now() AND owner IS DISTINCT FROM \(sparing)
        ORDER BY expires_at
        LIMIT \(limit)
        FOR UPDATE SKIP LOCKED
        """
    }

    /// The locked leases' items not finished (still available, not singly, and without a result
    /// row: a kept item has one) become singly with attempt 1, the attempt the range had started.
    /// Items a completion is writing right now are skipped, not waited for. A lease whose
    /// unfinished items were all handed back is deleted; any other is taken from its owner (`owner`
    /// gets " (rescued)"), so a late completion of the old owner writes no kept item under it, and
    /// the next rescue finishes it.
    static func rescueRanges(leases: [Int64], budgetSeconds: Double) -> SQL {
        """
        WITH expired AS MATERIALIZED (
            SELECT id, job_id, first_id, last_id, created_at, kept FROM siwa.item_leases WHERE id = ANY(\(leases))
        ),
        -- Each range is probed on the key, once per lease (a correlated count; a LATERAL that
        -- locks), never by hashing every available item of every partition.
        unfinished AS MATERIALIZED (
            SELECT e.id AS lease_id, \(unsafeSQL: ItemCounts.rangeUnfinished(lease: "e")) AS n FROM expired e
        ),
        locked AS MATERIALIZED (
            SELECT e.id AS lease_id, i.id, i.job_id, e.created_at,
                   (i.max_attempts <= 1 AND e.created_at <= now() - make_interval(secs => \(budgetSeconds))) AS spent
            FROM expired e CROSS JOIN LATERAL (
                SELECT r.id, r.job_id, r.max_attempts FROM siwa.job_items r
                WHERE r.job_id = e.job_id AND r.id BETWEEN e.first_id AND e.last_id
                  AND r.state = 'available' AND NOT r.claim_singly
                  AND NOT EXISTS (SELECT FROM siwa.results x WHERE x.job_id = r.job_id AND x.item_id = r.id OFFSET 0)
                ORDER BY r.id FOR UPDATE SKIP LOCKED) i
        ),
        moved AS (
            UPDATE siwa.job_items i
            SET state = CASE WHEN l.spent THEN 'discarded' ELSE 'available' END,
                claim_singly = NOT l.spent,
                attempt = 1,
                first_attempt_at = COALESCE(i.first_attempt_at, l.created_at),
                run_at = now(),
                last_error = 'lease expired: worker lost while the item was in flight',
                finished_at = CASE WHEN l.spent THEN now() END
            FROM locked l
            WHERE i.id = l.id AND i.job_id = l.job_id
            RETURNING i.id, i.job_id, i.account_id, i.state, i.attempt, l.lease_id
        ),
        counted AS MATERIALIZED (
            SELECT e.id, (SELECT u.n FROM unfinished u WHERE u.lease_id = e.id)
                         = (SELECT count(*) FROM moved m WHERE m.lease_id = e.id) AS all_back
            FROM expired e
        ),
        handed_back AS (
            DELETE FROM siwa.item_leases x USING counted c WHERE x.id = c.id AND c.all_back
        ),
        taken AS (
            UPDATE siwa.item_leases x SET owner = x.owner || ' (rescued)'
            FROM counted c WHERE x.id = c.id AND NOT c.all_back AND x.owner NOT LIKE '% (rescued)'
        ),
        \(discardedResults)
        SELECT count(*) FILTER (WHERE state = 'available') AS retried,
               count(*) FILTER (WHERE state = 'discarded') AS discarded
        FROM moved
        """
    }

    /// The result rows of items a rescue discarded (reads CTE `moved`).
    private static let discardedResults: SQL = """
        written AS (
            INSERT INTO siwa.results (item_id, job_id, account_id, outcome, detail, attempt)
            SELECT id, job_id, account_id, 'discarded',
                   '{"reason":"lease expired on the last attempt"}'::jsonb, attempt
            FROM moved WHERE state = 'discarded'
            ON CONFLICT (item_id, job_id) DO NOTHING
        )
        """
}
