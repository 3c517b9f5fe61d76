/// One job kind, as the worker drives it. Implementations live in SIWAJobs; the queue knows
/// nothing about Apple.
public protocol JobHandler: Sendable {
    /// The `siwa.jobs.kind` this handler runs.
    var kind: String { get }

    /// Body of a data-modifying CTE that applies per-item effects, run in the same statement as
    /// the items' completion. It may read CTE `done` with columns
    /// `item_id bigint, job_id bigint, account_id bigint, state text, outcome text, effect jsonb`
    /// (only rows whose lease this worker still held). `nil` when the kind has no effect.
    var effectSQL: String? { get }

    /// Prepares a claimed batch of one job (one round trip at most, e.g. loading encrypted tokens)
    /// and returns one operation per item, in the same order. An operation never throws: it
    /// reports its result as an `ItemOutcome`. Throwing here releases the whole batch.
    func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome]
}
