import Postgres

extension Retention {
    /// The partitioned tables, each with one partition per `siwa.item_partitions` row, named
    /// `<table>_<suffix>`.
    static let partitionedTables = ["job_items", "results", "result_history"]

    /// Drops one prunable partition from the three tables:
    ///
    /// 0. its finished jobs' summaries are written again (`siwa.summarize_job`), so a job retried
    ///    since an earlier prune summarized it is kept as it ended;
    /// 1. `DETACH PARTITION ... CONCURRENTLY` on each (outside a transaction; it waits for the
    ///    transactions that still see the partition, and blocks no claim or completion);
    /// 2. in one transaction (lock timeout 5 s): lock the detached tables, check again that every
    ///    job in the range is finished and older than the period (a job created in the range by a
    ///    transaction still open at step 1 is visible now), mark their summaries pruned, drop the
    ///    tables, forget the partition and write an audit row `retention.pruned`.
    ///
    /// When the check fails the tables are attached again as they were.
    /// - Returns: the items its jobs held (their `item_count`); nil when it was attached again.
    /// - Throws: `DatabaseError`.
    func drop(_ partition: Candidate, policy: RetentionPolicy) async throws -> Int? {
        let tables = Self.partitionedTables.map { ($0, "\($0)_\(partition.name)") }
        _ = try await pool.query("""
            SELECT siwa.summarize_job(j.id) FROM siwa.jobs j
            WHERE j.id >= \(partition.lo) AND j.id < \(partition.hi) AND j.state IN ('completed', 'cancelled')
            """)
        try await pool.withConnection { conn in
            for (parent, table) in tables {
                guard try await Self.isAttached(table, conn) else { continue }
                try await conn.simpleQuery(unsafeSQL: "ALTER TABLE siwa.\(SQL.quoteIdentifier(parent)) DETACH PARTITION "
                                               + "siwa.\(SQL.quoteIdentifier(table)) CONCURRENTLY")
            }
        }
        let lo = partition.lo, hi = partition.hi
        let items: Int? = try await pool.transaction { tx in
            _ = try await tx.query("SELECT set_config('lock_timeout', '5s', true)")
            let names = tables.map { "siwa." + SQL.quoteIdentifier($0.1) }.joined(separator: ", ")
            try await tx.execute(SQL(unsafeSQL: "LOCK TABLE \(names) IN ACCESS EXCLUSIVE MODE"))
            let rows = try await tx.query("""
                SELECT count(*) FILTER (WHERE NOT (j.state IN ('completed', 'cancelled')
                                       AND j.finished_at < now() - make_interval(days => \(policy.jobDays))))::int AS holding,
                       COALESCE(sum(j.item_count), 0)::int AS items
                FROM siwa.jobs j WHERE j.id >= \(lo) AND j.id < \(hi)
                """)
            guard let row = rows.first, try row.decode("holding", as: Int.self) == 0 else { return nil }
            try await tx.execute("""
                UPDATE siwa.job_summaries SET pruned_at = now() WHERE job_id >= \(lo) AND job_id < \(hi)
                """)
            try await tx.execute(SQL(unsafeSQL: "DROP TABLE \(names)"))
            try await tx.execute("DELETE FROM siwa.item_partitions WHERE suffix = \(partition.name)")
            let items: Int = try row.decode("items")
            try await tx.execute("""
                INSERT INTO siwa.audit_log (actor, action, detail)
                VALUES (current_user, 'retention.pruned',
                        jsonb_build_object('partition', \(partition.name)::text, 'jobs', \(partition.jobs)::int,
                                           'items', \(items)::int, 'job_days', \(policy.jobDays)::int))
                """)
            return items
        }
        if items == nil { try await reattach(partition, tables: tables) }
        return items
    }

    /// Attaches the detached tables of `partition` again, with their old bounds (the CHECK
    /// constraint DETACH CONCURRENTLY left spares the validation scan).
    func reattach(_ partition: Candidate, tables: [(String, String)]) async throws {
        let from = partition.name == "legacy" ? "MINVALUE" : String(partition.lo)
        try await pool.withConnection { conn in
            for (parent, table) in tables {
                guard try await !Self.isAttached(table, conn) else { continue }
                try await conn.simpleQuery(unsafeSQL: "ALTER TABLE siwa.\(SQL.quoteIdentifier(parent)) ATTACH PARTITION "
                                               + "siwa.\(SQL.quoteIdentifier(table)) FOR VALUES FROM (\(from)) TO (\(partition.hi))")
            }
        }
    }

    /// True when `siwa.<table>` is a partition not being detached.
    static func isAttached(_ table: String, _ conn: PostgresConnection) async throws -> Bool {
        let rows = try await conn.query("""
            SELECT EXISTS (SELECT FROM pg_inherits
                           WHERE inhrelid = to_regclass('siwa.' || quote_ident(\(table))) AND NOT inhdetachpending) AS attached
            """)
        return try rows.first?.decode("attached") ?? false
    }

    /// Finishes detaches a failed prune left pending (`DETACH ... FINALIZE`), so they can be dropped.
    func finalizePendingDetaches() async throws {
        let rows = try await pool.query("""
            SELECT p.relname AS parent, c.relname AS child
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
            JOIN pg_namespace n ON n.oid = p.relnamespace
            WHERE i.inhdetachpending AND n.nspname = 'siwa'
            """)
        for row in rows {
            let parent: String = try row.decode("parent"), child: String = try row.decode("child")
            try await pool.withConnection { conn in
                try await conn.simpleQuery(unsafeSQL: "ALTER TABLE siwa.\(SQL.quoteIdentifier(parent)) DETACH PARTITION "
                                               + "siwa.\(SQL.quoteIdentifier(child)) FINALIZE")
            }
        }
    }

    /// Deletes audit rows older than `days` (the append-only trigger lets only such rows go, and
    /// only in a transaction that sets `siwa.audit_prune_before`).
    func pruneAudit(days: Int, dryRun: Bool) async throws -> Int {
        if dryRun {
            let rows = try await pool.query("""
                SELECT count(*)::int AS n FROM siwa.audit_log WHERE at < now() - make_interval(days => \(days))
                """)
            return try rows.first?.decode("n") ?? 0
        }
        return try await pool.transaction { tx in
            _ = try await tx.query("""
                SELECT set_config('siwa.audit_prune_before', (now() - make_interval(days => \(days)))::text, true)
                """)
            return try await tx.execute("DELETE FROM siwa.audit_log WHERE at < now() - make_interval(days => \(days))")
        }
    }

    /// Drops raw payloads (the notification JWTs) of notifications processed more than `days` ago.
    func dropPayloads(days: Int, dryRun: Bool) async throws -> Int {
        let old: SQL = "payload IS NOT NULL AND processed_at < now() - make_interval(days => \(days))"
        if dryRun {
            let rows = try await pool.query("SELECT count(*)::int AS n FROM siwa.notifications WHERE \(old)")
            return try rows.first?.decode("n") ?? 0
        }
        return try await pool.execute("UPDATE siwa.notifications SET payload = NULL WHERE \(old)")
    }
}
