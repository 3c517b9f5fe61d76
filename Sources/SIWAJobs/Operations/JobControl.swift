import Postgres

/// Operator actions on one job (`siwa-jobs job pause|resume|cancel N`, `job priority N P`, `job retry N`
/// in `JobControl+Retry`), each recorded in the audit log.
public struct JobControl: Sendable {
    public enum Action: String, Sendable, CaseIterable {
        /// A running job stops being claimed (`paused_reason`: who paused it); items in flight
        /// finish. `resume` continues it.
        case pause
        /// A paused job runs again (workers are woken with NOTIFY); a tripped safety stop is
        /// overridden.
        case resume
        /// A running or paused job stops: its items not yet claimed are cancelled (and verdicts a
        /// safety stop held back are never applied).
        case cancel

        /// The states the job must be in.
        public var requiredStates: String {
            switch self {
            case .pause: "running"
            case .resume: "paused"
            case .cancel: "running or paused"
            }
        }
    }

    public enum Outcome: Sendable, Equatable {
        /// The job changed state; an audit row `job.resume` / `job.cancel` was written.
        case done
        /// The job was resumed past its tripped safety stop (`SafetyStopRule`): the stop is
        /// `overridden`, so the rule does not pause the job again, and the `invalid` verdicts it
        /// held back were applied to `appliedVerdicts` accounts; audit rows `job.resume` and
        /// `job.safety_stop_overridden` were written.
        case overrodeSafetyStop(appliedVerdicts: Int)
        /// No job has this id.
        case notFound
        /// The job is in `state`, not one the action applies to; nothing changed.
        case notApplicable(state: String)
    }

    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// - Throws: `DatabaseError`.
    public func perform(_ action: Action, jobID id: Int64) async throws -> Outcome {
        let changed: Int
        var override: Int?
        switch action {
        case .pause:
            changed = try await pool.execute("""
                UPDATE siwa.jobs SET state = 'paused', paused_reason = 'paused by ' || current_user || ' (siwa-jobs job pause)'
                WHERE id = \(id) AND state = 'running'
                """)
        case .resume:
            // The job runs again and a tripped safety stop is overridden, its held-back verdicts applied.
            // The stop's row is locked first, as completion statements lock it before the job's row.
            let rows = try await pool.transaction { tx in
                _ = try await tx.query("SELECT job_id FROM siwa.safety_stops WHERE job_id = \(id) FOR UPDATE")
                return try await tx.query("""
                    WITH j AS (UPDATE siwa.jobs SET state = 'running', paused_reason = NULL
                               WHERE id = \(id) AND state = 'paused' RETURNING id, kind),
                    s AS (UPDATE siwa.safety_stops s SET state = 'overridden', decided_at = now()
                          FROM j WHERE s.job_id = j.id AND s.state = 'tripped'
                          RETURNING s.job_id, s.seen, s.invalid, s.threshold_percent, s.deferred_accounts),
                    applied AS (UPDATE siwa.accounts a SET token_status = 'invalid', token_checked_at = now(), updated_at = now()
                                FROM s WHERE a.id = ANY(s.deferred_accounts) AND a.token_status <> 'revoked'
                                RETURNING a.id),
                    audit AS (INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                              SELECT current_user, 'job.safety_stop_overridden', s.job_id,
                                     jsonb_build_object('seen', s.seen, 'invalid_grant', s.invalid,
                                                        'threshold_percent', s.threshold_percent,
                                                        'applied', (SELECT count(*) FROM applied))
                              FROM s)
                    SELECT pg_notify('siwa_jobs', kind), (SELECT count(*) FROM s)::int AS overridden,
                           (SELECT count(*) FROM applied)::int AS applied
                    FROM j
                    """)
            }
            changed = rows.count
            if let row = rows.first, try row.decode("overridden", as: Int.self) > 0 { override = try row.decode("applied") }
        case .cancel:
            changed = try await pool.transaction { tx in
                let n = try await tx.execute("""
                    UPDATE siwa.jobs SET state = 'cancelled', finished_at = now()
                    WHERE id = \(id) AND state IN ('running', 'paused')
                    """)
                if n > 0 {
                    // Items not handed out: singly ones waiting, and planned ones past the job's
                    // cursor. Items out by range stay until they complete (like running ones).
                    try await tx.execute("""
                        UPDATE siwa.job_items SET state = 'cancelled', finished_at = now(), lease_owner = NULL,
                                                  claim_singly = false
                        WHERE job_id = \(id) AND state = 'available'
                          AND (claim_singly OR id > (SELECT claim_cursor FROM siwa.jobs WHERE id = \(id)))
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
        return override.map { .overrodeSafetyStop(appliedVerdicts: $0) } ?? .done
    }
}
