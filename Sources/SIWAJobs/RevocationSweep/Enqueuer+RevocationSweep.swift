import Postgres

extension Enqueuer {
    /// Plans a revocation sweep for accounts of one team and client that are marked deleted or
    /// consent-revoked and still hold a refresh token (TN3194).
    /// Throws `EnqueueError` when such a job is already running or paused for that client.
    public func enqueueRevocationSweep(teamID: String, clientID: String, createdBy: String,
                                       maxAttempts: Int = 5) async throws -> EnqueuedJob {
        let spec = ClientJobSpec(teamID: teamID, clientID: clientID)
        let uniqueKey = "revocation-sweep:\(teamID):\(clientID)"
        return try await plan(kind: RevocationSweepHandler.kind, spec: spec, uniqueKey: uniqueKey, createdBy: createdBy) { jobID in
            """
            INSERT INTO siwa.job_items (job_id, account_id, max_attempts)
            SELECT \(jobID), a.id, \(maxAttempts)
            FROM siwa.accounts a
            WHERE a.team_id = \(teamID) AND a.client_id = \(clientID)
              AND a.refresh_token_ciphertext IS NOT NULL
              AND (a.deleted_at IS NOT NULL OR a.consent_revoked_at IS NOT NULL)
            ORDER BY a.id
            """
        }
    }
}
