import Postgres

/// Which jobs one worker may claim, judged by their spec (`siwa.jobs.spec`, JSON): a job whose
/// spec names `key` is in scope only when its spec contains one of `allowed` (JSON objects,
/// matched with PostgreSQL's `@>`); a job whose spec does not name `key` always is.
///
/// For siwa-jobs: `key` is `team_id` and `allowed` holds one `{"team_id": ..., "client_id": ...}`
/// per team and client the worker has Apple credentials for, so a worker never takes items it
/// cannot call Apple for; they wait for a worker that can (`JobStore.outOfScopeJobs`).
public struct JobScope: Sendable, Equatable {
    /// The spec member that makes a job scoped; nil: every job is in scope.
    public let key: String?
    /// JSON objects, as text; a scoped job's spec must contain one of them.
    public let allowed: [String]
    /// Why a job out of scope cannot run here, for the drain's report ("no Apple credentials ...").
    public let reason: String

    /// Every job is in scope.
    public static let everything = JobScope(key: nil, allowed: [], reason: "")

    public init(key: String?, allowed: [String], reason: String) {
        self.key = key
        self.allowed = allowed
        self.reason = reason
    }

    /// A condition on the job row `alias` (e.g. `j`) that holds for jobs in scope. Three binds
    /// whatever the scope, so a statement keeps one generic plan.
    func condition(_ alias: String) -> SQL {
        let unscoped = key == nil
        return """
            (\(unscoped)::boolean OR \(unsafeSQL: alias).spec ->> \(key ?? "")::text IS NULL
             OR \(unsafeSQL: alias).spec @> ANY(\(allowed)::jsonb[]))
            """
    }
}
