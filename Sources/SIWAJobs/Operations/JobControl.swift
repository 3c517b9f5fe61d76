import Postgres

/// Operator actions on one job (`siwa-jobs job resume|cancel N`), each recorded in the audit log.
public struct JobControl: Sendable {
    public enum Action: String, Sendable, CaseIterable {
        /// A paused job runs again (workers are woken with NOTIFY).
        case resume
        /// A running or paused job stops: its items not yet claimed are cancelled.
        case cancel

        /// The states the job must be in.
        public var requiredStates: String {
            switch self {
            case .resume: "paused"
            case .cancel: "running or paused"
            }
        }
    }

    public enum Outcome: Sendable, Equatable {
        /// The job changed state; an audit row `job.resume` / `job.cancel` was written.
        case done
        /// No job has this id.
        case notFound
        /// The job is in `state`, not one the action applies to; nothing changed.
        case notApplicable(state: String)
    }

    private let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// - Throws: `DatabaseError`.
    public func perform(_ action: Action, jobID id: Int64) async throws -> Outcome {
        let changed: Int
        switch action {
        case .resume:
            changed = try await pool.execute("""
                WITH j AS (UPDATE siwa.jobs SET state = 'running', paused_reason = NULL
                           WHERE id = \(id) AND state = 'paused' RETURNING id, kind)
                SELECT pg_notify('siwa_jobs', kind) FROM j
                """)
        case .cancel:
            changed = try await pool.transaction { tx in
                let n = try await tx.execute("""
                    UPDATE siwa.jobs SET state = 'cancelled', finished_at = now()
                    WHERE id = \(id) AND state IN ('running', 'paused')
                    """)
                if n > 0 {
                    try await tx.execute("""
                        UPDATE siwa.job_items SET state = 'cancelled', finished_at = now(), lease_owner = NULL
                        WHERE job_id = \(id) AND state = 'available'
                        """)
                }
                return n
            }
        }
        guard changed > 0 else {
            let rows = try await pool.query("SELECT state FROM siwa.jobs WHERE id = \(id)")
            guard let state: String = try rows.first?.decode("state") else { return .notFound }
            return .notApplicable(state: state)
        }
        try await pool.execute("""
            INSERT INTO siwa.audit_log (actor, action, job_id) VALUES (current_user, \("job." + action.rawValue), \(id))
            """)
        return .done
    }
}
