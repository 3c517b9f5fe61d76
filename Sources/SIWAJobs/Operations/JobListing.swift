import Foundation
import Postgres
import Queue

/// One job as `jobs list` and `status` show it. Cheap to read for any number of jobs: `done` is
/// the planned `item_count` less the items still available or running (both read on partial
/// indexes), or the summary's counts once the job's rows are pruned.
public struct JobListEntry: Sendable, Equatable {
    public var id: Int64
    public var kind: String
    /// `running`, `paused`, `completed`, `cancelled`.
    public var state: String
    public var priority: Int
    public var createdAt: Date
    public var finishedAt: Date?
    /// Items planned (`siwa.jobs.item_count`).
    public var items: Int
    /// Items in a terminal state (succeeded, failed, discarded, cancelled).
    public var done: Int
    public var pausedReason: String?
    /// Its items and results were dropped by `prune`; the summary remains.
    public var pruned: Bool

    /// `done` of `items`, in percent (100 for a job without items).
    public var percent: Double { items > 0 ? 100 * Double(done) / Double(items) : 100 }
}

/// Reads jobs for `siwa-jobs jobs list` and `status`.
public struct JobListing: Sendable {
    /// Which jobs to list.
    public struct Filter: Sendable, Equatable {
        /// Job states (`running`, `paused`, `completed`, `cancelled`); empty: all.
        public var states: [String]
        public var kind: String?
        /// Only jobs created at or after this time.
        public var since: Date?
        /// At most this many, newest first.
        public var limit: Int

        public init(states: [String] = [], kind: String? = nil, since: Date? = nil, limit: Int = 100) {
            self.states = states
            self.kind = kind
            self.since = since
            self.limit = limit
        }
    }

    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The jobs matching `filter`, newest first.
    /// - Throws: `DatabaseError`.
    public func list(_ filter: Filter) async throws -> [JobListEntry] {
        try await read("""
            WHERE (cardinality(\(filter.states)::text[]) = 0 OR j.state = ANY(\(filter.states)::text[]))
              AND (\(filter.kind)::text IS NULL OR j.kind = \(filter.kind)::text)
              AND (\(filter.since)::timestamptz IS NULL OR j.created_at >= \(filter.since)::timestamptz)
            ORDER BY j.id DESC LIMIT \(filter.limit)
            """)
    }

    /// What `status` shows without `--job`: every running or paused job, and the jobs finished in
    /// the last `recentSeconds` seconds (default a day), oldest first.
    public func activeAndRecent(recentSeconds: Int = 86_400) async throws -> [JobListEntry] {
        try await read("""
            WHERE j.state IN ('running', 'paused') OR j.finished_at > now() - make_interval(secs => \(recentSeconds))
            ORDER BY j.id
            """)
    }

    /// The jobs with these ids, by id.
    public func entries(ids: [Int64]) async throws -> [JobListEntry] {
        try await read("WHERE j.id = ANY(\(ids)) ORDER BY j.id")
    }

    /// The entries of the jobs `filter` (a WHERE/ORDER BY tail on `siwa.jobs j`) selects.
    func read(_ filter: SQL) async throws -> [JobListEntry] {
        // Without JIT: the per-lease probes of `ItemCounts` inflate the estimate (`withoutJIT`).
        let rows = try await pool.queryWithoutJIT("""
            SELECT j.id, j.kind, j.state, j.priority::int AS priority, j.created_at, j.finished_at, j.item_count,
                   j.paused_reason, s.pruned_at IS NOT NULL AS pruned,
                   CASE WHEN s.pruned_at IS NOT NULL
                        THEN (s.items - COALESCE((s.item_states->>'available')::bigint, 0)
                                      - COALESCE((s.item_states->>'running')::bigint, 0))::int
                        ELSE (j.item_count - \(unsafeSQL: ItemCounts.unfinished(job: "j.id", cursor: "j.claim_cursor")))::int
                   END AS done
            FROM siwa.jobs j LEFT JOIN siwa.job_summaries s ON s.job_id = j.id
            """ + " " + filter)
        return try rows.map { row in
            JobListEntry(id: try row.decode("id"), kind: try row.decode("kind"), state: try row.decode("state"),
                         priority: try row.decode("priority"), createdAt: try row.decode("created_at"),
                         finishedAt: try row.decode("finished_at", as: Date?.self), items: try row.decode("item_count"),
                         done: max(0, try row.decode("done")), pausedReason: try row.decode("paused_reason", as: String?.self),
                         pruned: try row.decode("pruned"))
        }
    }
}
