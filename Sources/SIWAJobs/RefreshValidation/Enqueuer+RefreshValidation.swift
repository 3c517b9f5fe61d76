import Postgres

extension Enqueuer {
    /// Plans refresh-token validation for accounts of one team and client whose token was not
    /// checked in the last 24 hours (Apple allows validation at most once a day), that still hold a
    /// token not already known invalid, and that are neither deleted nor revoked, with the safety
    /// stop `safetyStop` (`SafetyStopRule`; `.off` disables it), at `priority` (nil: `JobPriority.nightly`).
    /// - Returns: the new job; the active one (`alreadyActive`) when a validation for the client is
    ///   still running or paused; nil when no account is due (no job is created).
    /// - Throws: `EnqueueError` `.likelyTypo` when the team or client has no account at all, or for
    ///   a priority outside `JobPriority.range`.
    public func enqueueRefreshValidation(teamID: String, clientID: String, createdBy: String, maxAttempts: Int = 5,
                                         priority: Int? = nil,
                                         safetyStop: SafetyStopRule = SafetyStopRule()) async throws -> EnqueuedJob? {
        try await planClientAccounts(kind: RefreshValidationHandler.kind, teamID: teamID, clientID: clientID,
                                     createdBy: createdBy, maxAttempts: maxAttempts, priority: priority,
                                     safetyStop: RefreshValidationHandler.safetyStop.arming(safetyStop), accounts: """
            a.deleted_at IS NULL AND a.consent_revoked_at IS NULL
              AND a.token_status NOT IN ('invalid', 'revoked')
              AND (a.token_checked_at IS NULL OR a.token_checked_at < now() - interval '24 hours')
            """)
    }
}
