import Postgres
import Queue

extension JobControl {
    /// What `setPriority` did.
    public enum PriorityOutcome: Sendable, Equatable {
        /// The job's priority is now the one asked for (it was `from`); an audit row
        /// `job.priority` records both. The next claim of any worker uses it.
        case changed(from: Int)
        /// No job has this id.
        case notFound
        /// The job is `state` (completed or cancelled): nothing is left to claim; nothing changed.
        case notApplicable(state: String)
    }

    /// Sets the priority of a running or paused job (`siwa-jobs job priority N P`). Items already
    /// claimed keep their place; every later claim orders the job's due items by the new priority.
    /// - Parameter priority: `JobPriority`: 0 the most urgent … 9 the least.
    /// - Throws: `EnqueueError` for a priority outside `JobPriority.range` (nothing is written);
    ///   `DatabaseError`.
    public func setPriority(jobID id: Int64, to priority: Int) async throws -> PriorityOutcome {
        let priority = try JobPriority.checked(priority)
        let rows = try await pool.transaction { tx in
            try await tx.query("""
                WITH old AS (SELECT id, priority FROM siwa.jobs WHERE id = \(id) AND state IN ('running', 'paused') FOR UPDATE),
                changed AS (UPDATE siwa.jobs j SET priority = \(priority) FROM old WHERE j.id = old.id RETURNING j.id),
                audit AS (INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                          SELECT current_user, 'job.priority', old.id,
                                 jsonb_build_object('from', old.priority, 'to', \(priority)::int)
                          FROM old)
                SELECT old.priority::int AS previous FROM old JOIN changed ON changed.id = old.id
                """)
        }
        if let row = rows.first { return .changed(from: try row.decode("previous")) }
        let state = try await pool.query("SELECT state FROM siwa.jobs WHERE id = \(id)")
        guard let current: String = try state.first?.decode("state") else { return .notFound }
        return .notApplicable(state: current)
    }
}
