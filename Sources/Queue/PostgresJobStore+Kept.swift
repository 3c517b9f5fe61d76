import Postgres

extension PostgresJobStore {
    /// The completion statement's CTEs for kept items (`KindWrites.keepsSucceededRangeItems`: range
    /// items that succeeded with a result keep their planned row), each followed by a comma, or
    /// nothing when the batch keeps no item. They read `input` (with `keep`) and give `kept`, with
    /// the columns `updated` returns, for `done`:
    /// - `leases`: `owner`'s range leases holding the kept items, locked `FOR NO KEY UPDATE` in id
    ///   order. A rescue locks a lease `FOR UPDATE SKIP LOCKED` and, before it commits, deletes it
    ///   or takes it from its owner; so a completion either finds the range still its own (and the
    ///   rescue leaves it for later) or writes nothing under it.
    /// - `kept`: the kept items under those leases;
    /// - `kept_results`: their result rows, `kept` true, a plain insert as for other results. A
    ///   second completion of the same item (a retried statement whose first try committed) meets
    ///   the key: the statement is refused as bad data, and the flusher, down to that item, asks
    ///   `keptResultExists` and counts it as written;
    /// - `kept_counts`: each lease's count of kept items (`item_leases.kept`), so its unfinished
    ///   items are counted without looking up results (`ItemCounts.rangeUnfinished`).
    static func keptSQL(keep: [Bool], completions: [Completion], owner: String, kindAliases: String, kindTargets: String) -> SQL {
        let kept = zip(keep, completions).filter(\.0).map(\.1.item)
        guard let low = kept.map(\.id).min(), let high = kept.map(\.id).max() else { return "" }
        let keptJobs = Array(Set(kept.map(\.jobID))).sorted()
        return """
            leases AS MATERIALIZED (
                SELECT l.id, l.job_id, l.first_id, l.last_id FROM siwa.item_leases l
                WHERE l.owner = \(owner) AND l.job_id = ANY(\(keptJobs)) AND l.last_id >= \(low) AND l.first_id <= \(high)
                ORDER BY l.id
                FOR NO KEY UPDATE
            ),
            kept AS MATERIALIZED (
                SELECT u.item_id, u.job_id, u.account_id, u.attempt, u.state, u.outcome, u.http_status,
                       u.detail, u.audit_action, u.audit_detail, u.effect, true AS kept\(unsafeSQL: kindAliases)
                FROM input u
                WHERE u.keep AND EXISTS (SELECT FROM leases l WHERE l.job_id = u.job_id AND u.item_id BETWEEN l.first_id AND l.last_id)
            ),
            kept_results AS (
                INSERT INTO siwa.results (item_id, job_id, account_id, outcome, http_status, detail, attempt, kept\(unsafeSQL: kindTargets))
                SELECT item_id, job_id, account_id, outcome, http_status, COALESCE(detail, '{}'), attempt, true\(unsafeSQL: kindAliases)
                FROM kept
            ),
            kept_counts AS (
                UPDATE siwa.item_leases x SET kept = x.kept + c.n
                FROM (SELECT l.id, count(*) AS n FROM leases l
                      JOIN kept k ON k.job_id = l.job_id AND k.item_id BETWEEN l.first_id AND l.last_id
                      GROUP BY l.id) c
                WHERE x.id = c.id
            ),
            """
    }

    /// Whether `completion` is a kept one (`KindWrites.keepsSucceededRangeItems`) whose result row
    /// is already there: an earlier try of its statement committed though its answer was lost.
    /// - Throws: `DatabaseError`.
    public func keptResultExists(_ completion: Completion, writes: KindWrites) async throws -> Bool {
        guard Self.keeps(completion, writes: writes) else { return false }
        let rows = try await pool.query("""
            SELECT FROM siwa.results WHERE job_id = \(completion.item.jobID) AND item_id = \(completion.item.id) AND kept
            """)
        return !rows.isEmpty
    }

    /// Whether `completion` keeps its item's row: a range item of a kind that keeps them, succeeded
    /// with a result, charged.
    static func keeps(_ completion: Completion, writes: KindWrites) -> Bool {
        writes.keepsSucceededRangeItems && completion.item.claimedByRange && completion.state == .succeeded
            && completion.result != nil && !completion.uncharged
    }
}
