import Postgres

extension PostgresJobStore {
    /// One statement per call: the items' new state, their result rows (at most one per item, by
    /// key) with the kind's own result columns, audit rows and the kind's effect steps, all only for
    /// items `owner` still leases at the claimed attempt. A statement is atomic, so either all of an
    /// item's writes land or none. See `CompletionEffect` for what effect steps may read.
    public func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int] {
        guard !completions.isEmpty else { return [:] }
        // The items' jobs, constant, so the statement reads only their partitions of job_items.
        let jobIDs = Array(Set(completions.map(\.item.jobID))).sorted()
        var ids: [Int64] = [], jobs: [Int64] = [], attempts: [Int] = [], states: [ItemState] = [], delays: [Double] = []
        var uncharged: [Bool] = [], errors: [String?] = [], outcomes: [String?] = [], statuses: [String?] = []
        var details: [String?] = [], auditActions: [String?] = [], auditDetails: [String?] = [], effects: [String?] = []
        let columns = writes.resultColumns
        var kindValues = [[String?]](repeating: [], count: columns.count)
        for c in completions {
            ids.append(c.item.id)
            jobs.append(c.item.jobID)
            attempts.append(c.item.attempt)
            states.append(c.state)
            delays.append(c.delay.seconds)
            uncharged.append(c.uncharged)
            errors.append(c.lastError)
            outcomes.append(c.result?.outcome.rawValue)
            statuses.append(c.result?.httpStatus.map(String.init))
            details.append(c.result?.detail)
            auditActions.append(c.audit?.action)
            auditDetails.append(c.audit?.detail)
            effects.append(c.effect?.json)
            for (index, column) in columns.enumerated() { kindValues[index].append(c.result?.kindValues[column]) }
        }
        // The kind's columns travel as text[] binds beside the queue's, named kind_value_<n> in
        // `input` and `done`, and are written under their declared (quoted) names.
        var kindArguments: SQL = "", kindAliases = "", kindTargets = ""
        for (index, values) in kindValues.enumerated() {
            kindArguments += ", \(values)::text[]"
            kindAliases += ", kind_value_\(index + 1)"
            kindTargets += ", " + SQL.quoteIdentifier(columns[index].name)
        }
        var sql: SQL = """
            WITH input AS MATERIALIZED (
                SELECT u.*, 'running'::text AS leased_state, \(owner)::text AS leased_by FROM unnest(\(ids)::bigint[], \(jobs)::bigint[], \(attempts)::int[], \(states)::text[], \(delays)::float8[],
                                     \(uncharged)::bool[], \(errors)::text[], \(outcomes)::text[], \(statuses)::int[],
                                     \(details)::jsonb[], \(auditActions)::text[], \(auditDetails)::jsonb[],
                                     \(effects)::jsonb[]\(kindArguments))
                    AS u(item_id, job_id, attempt, state, delay_s, uncharged, last_error, outcome, http_status,
                         detail, audit_action, audit_detail, effect\(unsafeSQL: kindAliases))
            ),
            done AS (
                UPDATE siwa.job_items i
                SET state = u.state,
                    attempt = CASE WHEN u.uncharged THEN i.attempt - 1 ELSE i.attempt END,
                    first_attempt_at = CASE WHEN u.uncharged AND i.attempt <= 1 THEN NULL ELSE i.first_attempt_at END,
                    run_at = CASE WHEN u.state = 'available' THEN now() + make_interval(secs => u.delay_s) ELSE i.run_at END,
                    lease_owner = NULL,
                    lease_expires_at = NULL,
                    last_error = COALESCE(u.last_error, i.last_error),
                    finished_at = CASE WHEN u.state IN ('succeeded', 'failed', 'discarded') THEN now() END
                FROM input u
                -- The lease is checked against the batch's own columns, not constants, so the planner
                -- cannot take "this owner's running items" for a handful and rescan the batch for
                -- each (quadratic in the batch): it finds items by key, or hashes the batch.
                WHERE i.job_id = ANY(\(jobIDs)) AND i.id = u.item_id AND i.job_id = u.job_id
                  AND i.state = u.leased_state AND i.lease_owner = u.leased_by AND i.attempt = u.attempt
                RETURNING i.id AS item_id, i.job_id, i.account_id, u.attempt, u.state, u.outcome, u.http_status,
                          u.detail, u.audit_action, u.audit_detail, u.effect\(unsafeSQL: kindAliases)
            ),
            written_results AS (
                INSERT INTO siwa.results (item_id, job_id, account_id, outcome, http_status, detail, attempt\(unsafeSQL: kindTargets))
                SELECT item_id, job_id, account_id, outcome, http_status, COALESCE(detail, '{}'), attempt\(unsafeSQL: kindAliases)
                FROM done
                WHERE outcome IS NOT NULL AND state IN ('succeeded', 'failed', 'discarded')
                ON CONFLICT (item_id, job_id) DO NOTHING
            ),
            written_audit AS (
                INSERT INTO siwa.audit_log (actor, action, job_id, item_id, account_id, detail)
                SELECT \(owner), audit_action, job_id, item_id, account_id, COALESCE(audit_detail, '{}')
                FROM done
                WHERE audit_action IS NOT NULL AND state IN ('succeeded', 'failed', 'discarded')
            )
            """
        for step in writes.effect?.steps ?? [] {
            sql += ", \(identifier: step.name) AS (\n\(unsafeSQL: step.body)\n)\n"
        }
        sql += "SELECT item_id, attempt FROM done"
        let statement = sql.reusingPlan()
        let rows = try await pool.withConnection { conn in try await conn.query(statement) }
        var written: [Int64: Int] = [:]
        for row in rows { written[try row.decode("item_id", as: Int64.self)] = try row.decode("attempt", as: Int.self) }
        return written
    }

    /// Expired leases: back to available now (the worker died, not the item), or discarded with a
    /// result row when the attempt that was running was the last and the first attempt is older
    /// than `retryBudget` (an item without a first-attempt time counts as older). Compare-and-set
    /// on the lease, so an item completed meanwhile is untouched; `sparing`'s leases are skipped.
    public func rescueExpired(limit: Int, sparing: String?, retryBudget: Duration) async throws -> RescueReport {
        let budgetSeconds = retryBudget.seconds
        let rows = try await pool.withConnection { conn in
            try await conn.query("""
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
                        run_at = now(),
                        lease_owner = NULL,
                        lease_expires_at = NULL,
                        last_error = 'lease expired: worker lost while the item was in flight',
                        finished_at = CASE WHEN e.spent THEN now() END
                    FROM expired e
                    WHERE i.id = e.id AND i.job_id = e.job_id AND i.state = 'running' AND i.lease_expires_at < now()
                    RETURNING i.id, i.job_id, i.account_id, i.state, i.attempt
                ),
                written AS (
                    INSERT INTO siwa.results (item_id, job_id, account_id, outcome, detail, attempt)
                    SELECT id, job_id, account_id, 'discarded',
                           '{"reason":"lease expired on the last attempt"}'::jsonb, attempt
                    FROM moved WHERE state = 'discarded'
                    ON CONFLICT (item_id, job_id) DO NOTHING
                )
                SELECT count(*) FILTER (WHERE state = 'available') AS retried,
                       count(*) FILTER (WHERE state = 'discarded') AS discarded
                FROM moved
                """)
        }
        guard let row = rows.first else { return RescueReport(retried: 0, discarded: 0) }
        return RescueReport(retried: try row.decode("retried"), discarded: try row.decode("discarded"))
    }
}
