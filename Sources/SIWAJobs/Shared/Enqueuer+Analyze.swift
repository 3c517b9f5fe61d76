import Postgres

extension Enqueuer {
    /// Jobs with at least this many items get their partition analyzed once planned.
    static let analyzeFrom = 1_000
    /// `default_statistics_target` for that `ANALYZE` (PostgreSQL's default is 100).
    static let statisticsTarget = 10

    /// Gives the planner statistics for a large job's partition of `siwa.job_items` right after
    /// planning (`ANALYZE` at statistics target `statisticsTarget`, sampling at most 300 × it
    /// rows), instead of a minute or more later when autovacuum gets to it: the worker's claims
    /// and completions, and the progress views, are planned from what the partition holds, not
    /// from an empty table. They need its size and that its items are available and distinct,
    /// which a small sample gives as well as the default 30,000 rows (the default target cost
    /// about 1% of PostgreSQL's CPU per item of a 40,000-item validation).
    /// Best effort: a role that does not own the table gets PostgreSQL's warning and no statistics;
    /// a failure is ignored (the job is planned either way).
    func analyzePartition(of job: EnqueuedJob) async {
        guard job.items >= Self.analyzeFrom else { return }
        _ = try? await pool.transaction { conn in
            let rows = try await conn.query("""
                SELECT format('siwa.%I', 'job_items_' || suffix) AS partition FROM siwa.item_partitions
                WHERE lo <= \(job.jobID) AND \(job.jobID) < hi
                """)
            guard let name: String = try rows.first?.decode("partition") else { return }
            // SET LOCAL: the target ends with the transaction, whatever happens in it.
            try await conn.simpleQuery(unsafeSQL: "SET LOCAL default_statistics_target = \(Self.statisticsTarget)")
            try await conn.simpleQuery(unsafeSQL: "ANALYZE \(name)")
        }
    }
}
