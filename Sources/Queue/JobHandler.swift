/// One job kind, as the worker drives it. Implementations live in SIWAJobs; the queue knows
/// nothing about Apple: a kind's own result columns and effect are declared in `writes`.
public protocol JobHandler: Sendable {
    /// The `siwa.jobs.kind` this handler runs.
    var kind: String { get }

    /// The kind-owned result columns and the effect the completion statement applies for this
    /// kind's items. Default: none.
    var writes: KindWrites { get }

    /// Prepares a claimed batch of one job (one round trip at most, e.g. loading encrypted tokens)
    /// and returns one operation per item, in the same order. An operation never throws: it
    /// reports its result as an `ItemOutcome`. Throwing here releases the whole batch.
    func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome]
}

extension JobHandler {
    public var writes: KindWrites { .none }
}
