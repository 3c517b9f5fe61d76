import Postgres

/// Items done of the jobs being worked on, for `work --progress`.
public struct ProgressReader: Sendable {
    /// Items terminal (succeeded, failed, discarded or cancelled) of `total` items.
    public struct Progress: Sendable, Equatable {
        public var done: Int
        public var total: Int
    }

    private let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Counts over the running and paused jobs and those finished in the last 10 seconds.
    /// - Throws: `DatabaseError`.
    public func read() async throws -> Progress {
        let rows = try await pool.query("""
            SELECT count(*) FILTER (WHERE i.state IN ('succeeded', 'failed', 'discarded', 'cancelled')) AS done,
                   count(*) AS total
            FROM siwa.job_items i JOIN siwa.jobs j ON j.id = i.job_id
            WHERE j.state IN ('running', 'paused') OR j.finished_at > now() - interval '10 seconds'
            """)
        guard let row = rows.first else { return Progress(done: 0, total: 0) }
        return Progress(done: try row.decode("done"), total: try row.decode("total"))
    }
}
