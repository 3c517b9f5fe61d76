import Postgres

extension JobControl {
    /// Which finished items `job retry` makes due again.
    public struct RetrySelection: Sendable, Equatable {
        /// Item states to retry: `failed`, `discarded`, or both (the default).
        public var states: [String]
        /// Only items whose result carries this Apple `error` code (e.g. `invalid_grant`); nil: any.
        public var appleError: String?

        public init(states: [String] = ["failed", "discarded"], appleError: String? = nil) {
            self.states = states
            self.appleError = appleError
        }
    }

    public enum RetryOutcome: Sendable, Equatable {
        /// `items` were made due with fresh attempts (0 when none matched); `reopened` when the
        /// job was completed and runs again.
        case retried(items: Int, reopened: Bool)
        case notFound
        /// The job is cancelled (or in another state retry does not apply to); nothing changed.
        case notApplicable(state: String)
        /// Reopening would make two active jobs with one unique key (e.g. tonight's validation of
        /// the same client is running): nothing changed.
        case activeDuplicate
    }

    /// `siwa-jobs job retry N`: the job's items in `selection.states` (and with the Apple error, if
    /// given) become available now with attempt 0, as if never tried, for any kind. Each one's
    /// result row moves to `siwa.result_history` (`superseded_at` = now), so the new attempt's
    /// result is the one in `siwa.results` and the old stays in history. A completed job runs
    /// again; running and paused ones keep their state. One transaction, audit row `job.retry`,
    /// then NOTIFY so idle workers claim at once.
    /// - Throws: `DatabaseError`.
    public func retry(jobID id: Int64, _ selection: RetrySelection) async throws -> RetryOutcome {
        let states = selection.states, appleError = selection.appleError
        do {
            return try await pool.transaction { tx in
                let jobs = try await tx.query("SELECT state, kind FROM siwa.jobs WHERE id = \(id) FOR UPDATE")
                guard let job = jobs.first else { return .notFound }
                let state: String = try job.decode("state"), kind: String = try job.decode("kind")
                guard ["completed", "running", "paused"].contains(state) else { return .notApplicable(state: state) }
                let rows = try await tx.query("""
                    WITH picked AS MATERIALIZED (
                        SELECT i.id FROM siwa.job_items i
                        WHERE i.job_id = \(id) AND i.state = ANY(\(states))
                          AND (\(appleError)::text IS NULL OR EXISTS (
                                SELECT FROM siwa.results r WHERE r.job_id = \(id) AND r.item_id = i.id AND r.apple_error = \(appleError)::text))
                        FOR UPDATE OF i
                    ),
                    moved AS (
                        DELETE FROM siwa.results r USING picked p WHERE r.job_id = \(id) AND r.item_id = p.id RETURNING r.*
                    ),
                    kept AS (
                        INSERT INTO siwa.result_history (item_id, job_id, account_id, outcome, http_status, apple_error, detail,
                                                         token_fingerprint, attempt, created_at, kept)
                        SELECT m.item_id, m.job_id, m.account_id, m.outcome, m.http_status, m.apple_error, m.detail,
                               m.token_fingerprint, m.attempt, m.created_at, m.kept
                        FROM moved m
                    ),
                    due AS (
                        UPDATE siwa.job_items i
                        SET state = 'available', attempt = 0, first_attempt_at = NULL, run_at = now(), finished_at = NULL,
                            last_error = NULL, lease_owner = NULL, lease_expires_at = NULL, claim_singly = true
                        FROM picked p WHERE i.job_id = \(id) AND i.id = p.id
                        RETURNING i.id
                    )
                    SELECT (SELECT count(*) FROM due)::int AS items
                    """)
                let items: Int = try rows.first?.decode("items") ?? 0
                var reopened = false
                if items > 0 && state == "completed" {
                    reopened = try await tx.execute("""
                        UPDATE siwa.jobs SET state = 'running', finished_at = NULL, paused_reason = NULL
                        WHERE id = \(id) AND state = 'completed'
                        """) > 0
                }
                try await tx.execute("""
                    INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                    VALUES (current_user, 'job.retry', \(id),
                            jsonb_build_object('items', \(items)::int, 'states', \(states)::text[], 'apple_error', \(appleError)::text,
                                               'reopened', \(reopened)::bool))
                    """)
                if items > 0 { try await tx.execute("SELECT pg_notify('siwa_jobs', \(kind))") }
                return .retried(items: items, reopened: reopened)
            }
        } catch let error as DatabaseError where error.isUniqueViolation {
            return .activeDuplicate
        }
    }
}
