import Postgres

extension Enqueuer {
    /// Plans `items` no-op items (queue benchmark) at `priority` (nil: `JobPriority.operations`).
    /// - Throws: `EnqueueError` for a priority outside `JobPriority.range`; `DatabaseError`.
    public func enqueueNoop(items: Int, priority: Int? = nil, createdBy: String) async throws -> EnqueuedJob {
        try await plan(kind: NoopHandler.kind, spec: EmptyJobSpec(), priority: priority, uniqueKey: nil, createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, payload, max_attempts, claim_singly)
            SELECT \(jobID), jsonb_build_object('n', g), 3, false FROM generate_series(1, \(items)) g
            """
        }
    }
}
