import Postgres

extension Enqueuer {
    /// Plans a revocation sweep for accounts of one team and client that are marked deleted or
    /// consent-revoked and still hold a refresh token (TN3194), with the safety stop `safetyStop`
    /// (`SafetyStopRule`; `.off` disables it), at `priority` (nil: `JobPriority.operations`).
    /// - Returns: the new job; the active one (`alreadyActive`) when a sweep for the client is
    ///   still running or paused; nil when no account is due (no job is created).
    /// - Throws: `EnqueueError` `.likelyTypo` when the team or client has no account at all, or for
    ///   a priority outside `JobPriority.range`.
    public func enqueueRevocationSweep(teamID: String, clientID: String, createdBy: String, maxAttempts: Int = 5,
                                       priority: Int? = nil,
                                       safetyStop: SafetyStopRule = SafetyStopRule()) async throws -> EnqueuedJob? {
        try await planClientAccounts(kind: RevocationSweepHandler.kind, teamID: teamID, clientID: clientID,
                                     createdBy: createdBy, maxAttempts: maxAttempts, priority: priority,
                                     safetyStop: RevocationSweepHandler.safetyStop.arming(safetyStop),
                                     accounts: "a.deleted_at IS NOT NULL OR a.consent_revoked_at IS NOT NULL")
    }
}
