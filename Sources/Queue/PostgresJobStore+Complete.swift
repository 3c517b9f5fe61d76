import Postgres

extension PostgresJobStore {
    /// One statement per call: the items' new state, their result rows (at most one per item, by
    /// key) with the kind's own result columns, audit rows and the kind's effect steps, all only for
    /// items `owner` still leases at the claimed attempt. A statement is atomic, so either all of an
    /// item's writes land or none. See `CompletionEffect` for what effect steps may read.
    ///
    /// The lease is checked the way the item was claimed (`ClaimedItem.claimedByRange`): a singly
    /// item must still be running under `owner` at the claimed attempt; a range item must still be
    /// untouched (available, not singly, attempt 0): a rescue or a release makes it singly, so a
    /// late completion of a range that was handed back writes nothing. A range item's terminal
    /// completion changes no indexed column, so its row is updated in place (HOT, no index entry).
    /// Items are written in id order, as the rescue locks them (no deadlock between the two).
    ///
    /// Succeeded range items of a kind that keeps them (`KindWrites.keepsSucceededRangeItems`) are
    /// not written: their result row (`kept` true) records that they ended (`keptSQL`).
    ///
    /// Result rows are inserted without `ON CONFLICT`: an item the statement finds still leased has
    /// no result row (results are written only as an item ends, and `jobs retry` moves an ended
    /// item's result to `siwa.result_history` before making it available again), so a conflict
    /// cannot arise, and a plain insert skips the speculative insertion's lock and extra WAL record
    /// per row (about 3.5% of PostgreSQL's CPU per item in a validation drain, README "Cost per
    /// item"). Were a row there all the same, the key refuses the batch as bad data and the
    /// flusher splits it (`Flusher.write`): nothing is overwritten or written twice.
    public func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int] {
        guard !completions.isEmpty else { return [:] }
        // The items' jobs, constant, so the statement reads only their partitions of job_items.
        let jobIDs = Array(Set(completions.map(\.item.jobID))).sorted()
        let completions = completions.sorted { $0.item.id < $1.item.id }
        var ids: [Int64] = [], jobs: [Int64] = [], attempts: [Int] = [], states: [ItemState] = [], delays: [Double] = []
        var byRange: [Bool] = [], keep: [Bool] = [], accounts: [Int64?] = []
        var uncharged: [Bool] = [], errors: [String?] = [], outcomes: [String?] = [], statuses: [String?] = []
        var details: [String?] = [], auditActions: [String?] = [], auditDetails: [String?] = [], effects: [String?] = []
        let columns = writes.resultColumns
        var kindValues = [[String?]](repeating: [], count: columns.count)
        for c in completions {
            ids.append(c.item.id)
            jobs.append(c.item.jobID)
            attempts.append(c.item.attempt)
            byRange.append(c.item.claimedByRange)
            accounts.append(c.item.accountID)
            keep.append(Self.keeps(c, writes: writes))
            states.append(c.state)
            delays.append(c.delay.seconds)
            uncharged.append(c.uncharged)
            errors.append(c.lastError)
            outcomes.append(c.result?.outcome.rawValue)
            statuses.append(c.result?.httpStatus.map(String.init))
            details.append(Self.boundDetail(c.result?.detail))
            auditActions.append(c.audit?.action)
            auditDetails.append(Self.boundDetail(c.audit?.detail))
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
                SELECT u.*,
                       CASE WHEN u.by_range THEN 'available' ELSE 'running' END AS leased_state,
                       CASE WHEN u.by_range THEN NULL ELSE \(owner)::text END AS leased_by,
                       CASE WHEN u.by_range THEN 0 ELSE u.attempt END AS leased_attempt
                FROM unnest(\(ids)::bigint[], \(jobs)::bigint[], \(attempts)::int[], \(byRange)::bool[], \(keep)::bool[],
                            \(accounts)::bigint[], \(states)::text[], \(delays)::float8[],
                                     \(uncharged)::bool[], \(errors)::text[], \(outcomes)::text[], \(statuses)::int[],
                                     \(details)::jsonb[], \(auditActions)::text[], \(auditDetails)::jsonb[],
                                     \(effects)::jsonb[]\(kindArguments))
                    AS u(item_id, job_id, attempt, by_range, keep, account_id, state, delay_s, uncharged, last_error, outcome, http_status,
                         detail, audit_action, audit_detail, effect\(unsafeSQL: kindAliases))
            ),
            \(Self.keptSQL(keep: keep, completions: completions, owner: owner, kindAliases: kindAliases, kindTargets: kindTargets))
            updated AS (
                UPDATE siwa.job_items i
                SET state = u.state,
                    attempt = CASE WHEN u.uncharged THEN u.attempt - 1 ELSE u.attempt END,
                    first_attempt_at = CASE WHEN u.uncharged AND u.attempt <= 1 THEN NULL
                                            ELSE COALESCE(i.first_attempt_at, now()) END,
                    run_at = CASE WHEN u.state = 'available' THEN now() + make_interval(secs => u.delay_s) ELSE i.run_at END,
                    claim_singly = (u.state = 'available'),
                    lease_owner = NULL,
                    lease_expires_at = NULL,
                    last_error = COALESCE(u.last_error, i.last_error),
                    finished_at = CASE WHEN u.state IN ('succeeded', 'failed', 'discarded') THEN now() END
                FROM input u
                -- The lease is checked against the batch's own columns, not constants, so the planner
                -- cannot take "this owner's running items" for a handful and rescan the batch for
                -- each (quadratic in the batch): it finds items by key, or hashes the batch.
                WHERE i.job_id = ANY(\(jobIDs)) AND i.id = u.item_id AND i.job_id = u.job_id
                  AND i.state = u.leased_state AND i.lease_owner IS NOT DISTINCT FROM u.leased_by
                  AND i.attempt = u.leased_attempt AND i.claim_singly = NOT u.by_range AND NOT u.keep
                RETURNING i.id AS item_id, i.job_id, i.account_id, u.attempt, u.state, u.outcome, u.http_status,
                          u.detail, u.audit_action, u.audit_detail, u.effect, false AS kept\(unsafeSQL: kindAliases)
            ),
            done AS (
                SELECT * FROM updated\(unsafeSQL: keep.contains(true) ? " UNION ALL SELECT * FROM kept" : "")
            ),
            written_results AS (
                INSERT INTO siwa.results (item_id, job_id, account_id, outcome, http_status, detail, attempt\(unsafeSQL: kindTargets))
                SELECT item_id, job_id, account_id, outcome, http_status, COALESCE(detail, '{}'), attempt\(unsafeSQL: kindAliases)
                FROM updated
                WHERE outcome IS NOT NULL AND state IN ('succeeded', 'failed', 'discarded')
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

    /// A result or audit detail as the completion binds it: an empty object (`{}`) travels as NULL,
    /// which the inserts write as `'{}'`, so the database parses one `jsonb` value fewer per item
    /// (`done` hands effect steps no detail).
    private static func boundDetail(_ detail: String?) -> String? {
        detail == "{}" ? nil : detail
    }
}
