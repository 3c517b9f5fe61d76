import Postgres

extension Enqueuer {
    /// Plans a revocation sweep for accounts of one team and client that are marked deleted or
    /// consent-revoked and still hold a refresh token (TN3194).
    /// Throws `EnqueueError` when such a job is already running or paused for that client.
    public func enqueueRevocationSweep(teamID: String, clientID: String, createdBy: String,
                                       maxAttempts: Int = 5) async throws -> EnqueuedJob {
        try await planClientAccounts(kind: RevocationSweepHandler.kind, teamID: teamID, clientID: clientID,
                                     createdBy: createdBy, maxAttempts: maxAttempts,
                                     accounts: "a.deleted_at IS NOT NULL OR a.consent_revoked_at IS NOT NULL")
    }
}
