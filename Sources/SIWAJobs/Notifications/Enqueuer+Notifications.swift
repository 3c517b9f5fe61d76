import Postgres

extension Enqueuer {
    /// Plans processing of stored notifications no job has taken yet (oldest first, at most
    /// `limit`). With `includeStranded`, also notifications still unprocessed whose job has
    /// finished (their item was discarded, e.g. after a long JWKS outage) or was cancelled.
    /// Rows are taken with `FOR UPDATE SKIP LOCKED`, so concurrent planners never plan one twice.
    /// The job runs at `priority` (nil: `JobPriority.notifications`).
    /// - Returns: nil when there was nothing to plan (no job is created).
    /// - Throws: `EnqueueError` for a priority outside `JobPriority.range`; `DatabaseError`.
    public func enqueueNotificationProcessing(createdBy: String, includeStranded: Bool = false, limit: Int = 100_000,
                                              maxAttempts: Int = 10, priority: Int? = nil) async throws -> EnqueuedJob? {
        let priority = try Self.priority(priority, kind: NotificationProcessingHandler.kind)
        let stranded = includeStranded ? Self.strandedNotifications : ""
        let due: Bool = try await pool.withConnection { conn in
            let rows = try await conn.query("""
                SELECT EXISTS (
                    SELECT 1 FROM siwa.notifications n
                    WHERE n.planned_job_id IS NULL \(unsafeSQL: stranded)
                ) AS due
                """)
            return try rows.first?.decode("due") ?? false
        }
        guard due else { return nil }
        return try await plan(kind: NotificationProcessingHandler.kind, spec: EmptyJobSpec(), priority: priority, uniqueKey: nil,
                              createdBy: createdBy) { jobID in
            """
            WITH picked AS (
                SELECT n.id FROM siwa.notifications n
                WHERE n.planned_job_id IS NULL \(unsafeSQL: stranded)
                ORDER BY n.id
                LIMIT \(limit)
                FOR UPDATE OF n SKIP LOCKED
            ),
            marked AS (
                UPDATE siwa.notifications n SET planned_job_id = \(jobID)
                FROM picked p WHERE n.id = p.id
                RETURNING n.id
            )
            INSERT INTO siwa.job_items (job_id, payload, max_attempts, claim_singly)
            SELECT \(jobID), jsonb_build_object('notification_id', id), \(maxAttempts), false FROM marked
            ORDER BY id
            """
        }
    }

    /// Unprocessed notifications whose processing job ended without processing them.
    static let strandedNotifications = """
        OR (n.processed_at IS NULL AND n.planned_job_id IN (SELECT id FROM siwa.jobs WHERE state IN ('completed', 'cancelled')))
        """
}
