import Postgres

extension Enqueuer {
    /// Plans refresh-token validation for accounts of one team and client whose token was not
    /// checked in the last 24 hours (Apple allows validation at most once a day), that still hold a
    /// token not already known invalid, and that are neither deleted nor revoked.
    /// Throws `EnqueueError` when such a job is already running or paused for that client.
    public func enqueueRefreshValidation(teamID: String, clientID: String, createdBy: String,
                                         maxAttempts: Int = 5) async throws -> EnqueuedJob {
        let spec = ClientJobSpec(teamID: teamID, clientID: clientID)
        let uniqueKey = "refresh-validation:\(teamID):\(clientID)"
        return try await plan(kind: RefreshValidationHandler.kind, spec: spec, uniqueKey: uniqueKey, createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, account_id, max_attempts)
            SELECT \(jobID), a.id, \(maxAttempts)
            FROM siwa.accounts a
            WHERE a.team_id = \(teamID) AND a.client_id = \(clientID)
              AND a.refresh_token_ciphertext IS NOT NULL
              AND a.deleted_at IS NULL AND a.consent_revoked_at IS NULL
              AND a.token_status NOT IN ('invalid', 'revoked')
              AND (a.token_checked_at IS NULL OR a.token_checked_at < now() - interval '24 hours')
            ORDER BY a.id
            """
        }
    }
}
