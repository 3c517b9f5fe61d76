import Postgres

extension Enqueuer {
    /// Jobs with at least this many items get their partition analyzed once planned.
    static let analyzeFrom = 1_000

    /// Gives the planner statistics for a large job's partition of `siwa.job_items` right after
    /// planning (`ANALYZE`, sampling at most 30,000 rows: ~0.1 s for 1,000,000 items), instead of a
    /// minute or more later when autovacuum gets to it: the worker's claims and completions, and
    /// the progress views, are planned from what the partition holds, not from an empty table.
    /// Best effort: a role that does not own the table gets PostgreSQL's warning and no statistics;
    /// a failure is ignored (the job is planned either way).
    func analyzePartition(of job: EnqueuedJob) async {
        guard job.items >= Self.analyzeFrom else { return }
        _ = try? await pool.withConnection { conn in
            let rows = try await conn.query("""
                SELECT format('siwa.%I', 'job_items_' || suffix) AS partition FROM siwa.item_partitions
                WHERE lo <= \(job.jobID) AND \(job.jobID) < hi
                """)
            guard let name: String = try rows.first?.decode("partition") else { return }
            try await conn.simpleQuery(unsafeSQL: "ANALYZE \(name)")
        }
    }
}
