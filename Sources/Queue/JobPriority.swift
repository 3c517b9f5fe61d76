/// How urgent a job is: `siwa.jobs.priority`, a smallint from 0 (the most urgent) to 9 (the least),
/// checked by the table (`sql/0014_priority_claim.sql`).
///
/// The claim (`JobStore.claim`) takes due items of more urgent jobs first; jobs of equal priority
/// share each claim batch fairly (`ClaimShares`), so a small job is never starved by a large one
/// of the same priority. Items inherit their job's priority: changing it (`siwa-jobs job priority`)
/// takes effect at the next claim. The job kinds' defaults are in SIWAJobs
/// (`JobPriority.default(forKind:)`).
public enum JobPriority {
    /// Every valid priority, most urgent first.
    public static let range = 0...9
    /// The most urgent priority.
    public static let mostUrgent = 0
    /// The least urgent priority.
    public static let leastUrgent = 9
    /// From this priority on (ops-triggered jobs, 4, and the nightly validation, 7) a job is bulk
    /// work: nobody waits on one item's completion, so the flusher may hold its completions a
    /// little longer to write them in fewer statements (`WorkerConfiguration.bulkFlushInterval`).
    public static let bulk = 4
}
