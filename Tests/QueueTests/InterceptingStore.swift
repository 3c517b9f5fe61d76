import Foundation
import Postgres
import Synchronization
import TestSupport
@testable import Queue

/// A `MemoryJobStore` whose completion and claim statements can be made to fail, as PostgreSQL
/// would (a unique-key violation, a statement timeout behind a lock, a missing table).
final class InterceptingStore: JobStore {
    let inner: MemoryJobStore
    /// Returns the error a completion batch fails with, or nil to let it through.
    private let completeFault: Mutex<@Sendable ([Completion]) -> DatabaseError?>
    /// Returns the error a claim fails with, or nil to let it through.
    private let claimFault: Mutex<@Sendable () -> DatabaseError?>
    /// Completion statements attempted (including failed ones).
    let completeCalls = Atomic<Int>(0)
    /// Backlog reads so far (a drain's looks at what is left).
    let backlogCalls = Atomic<Int>(0)
    /// Holds one claim until released (a claim that takes long), when armed.
    let hold = ClaimHold()
    /// Runs before each completion statement (a statement that takes long), when set.
    private let beforeComplete = Mutex<(@Sendable ([Completion]) async -> Void)?>(nil)

    init(inner: MemoryJobStore, complete: @escaping @Sendable ([Completion]) -> DatabaseError? = { _ in nil },
         claim: @escaping @Sendable () -> DatabaseError? = { nil }) {
        self.inner = inner
        self.completeFault = Mutex(complete)
        self.claimFault = Mutex(claim)
    }

    func failCompletions(_ fault: @escaping @Sendable ([Completion]) -> DatabaseError?) {
        completeFault.withLock { $0 = fault }
    }

    func gateCompletions(_ gate: @escaping @Sendable ([Completion]) async -> Void) {
        beforeComplete.withLock { $0 = gate }
    }

    func claim(owner: String, kinds: [String], limit: Int, lease: Duration) async throws -> [ClaimedItem] {
        await hold.pass()
        if let error = claimFault.withLock({ $0 })() { throw error }
        return try await inner.claim(owner: owner, kinds: kinds, limit: limit, lease: lease)
    }
    func jobs(ids: [Int64]) async throws -> [JobRecord] { try await inner.jobs(ids: ids) }
    func complete(_ completions: [Completion], owner: String, writes: KindWrites) async throws -> [Int64: Int] {
        completeCalls.add(1, ordering: .relaxed)
        if let gate = beforeComplete.withLock({ $0 }) { await gate(completions) }
        if let error = completeFault.withLock({ $0 })(completions) { throw error }
        return try await inner.complete(completions, owner: owner, writes: writes)
    }
    func extendLeases(owner: String, itemIDs: [Int64], lease: Duration) async throws -> Int {
        try await inner.extendLeases(owner: owner, itemIDs: itemIDs, lease: lease)
    }
    func rescueExpired(limit: Int, sparing: String?, retryBudget: Duration) async throws -> RescueReport {
        try await inner.rescueExpired(limit: limit, sparing: sparing, retryBudget: retryBudget)
    }
    func pauseJob(id: Int64, reason: String) async throws -> Bool { try await inner.pauseJob(id: id, reason: reason) }
    func completeFinishedJobs() async throws -> [Int64] { try await inner.completeFinishedJobs() }
    func pausedJobs(kinds: [String]) async throws -> [Int64: String] { try await inner.pausedJobs(kinds: kinds) }
    func backlog(kinds: [String]) async throws -> QueueBacklog {
        backlogCalls.add(1, ordering: .sequentiallyConsistent)
        return try await inner.backlog(kinds: kinds)
    }
    func openJobs(kinds: [String]) async throws -> [JobRecord] { try await inner.openJobs(kinds: kinds) }
}

/// Holds the first claim after `arm()` until `release()`; every other claim passes at once.
final class ClaimHold: Sendable {
    private let armed = Atomic<Bool>(false)
    private let holding = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)

    func arm() { armed.store(true, ordering: .sequentiallyConsistent) }
    func release() { released.store(true, ordering: .sequentiallyConsistent) }
    /// A claim is being held now.
    var isHolding: Bool { holding.load(ordering: .sequentiallyConsistent) }

    func pass() async {
        guard armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged else { return }
        holding.store(true, ordering: .sequentiallyConsistent)
        while !released.load(ordering: .sequentiallyConsistent) && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
        holding.store(false, ordering: .sequentiallyConsistent)
    }
}

extension DatabaseError {
    /// What PostgreSQL answers a statement cancelled by `statement_timeout` (57014).
    static var statementTimeout: DatabaseError {
        DatabaseError(kind: .query, sqlState: "57014", message: "canceling statement due to statement timeout")
    }
    /// A unique-key violation (23505): bad item data.
    static var uniqueViolation: DatabaseError {
        DatabaseError(kind: .query, sqlState: "23505", message: "duplicate key value violates unique constraint")
    }
    /// A missing relation (42P01): the schema is gone.
    static var undefinedTable: DatabaseError {
        DatabaseError(kind: .query, sqlState: "42P01", message: "relation \"siwa.results\" does not exist")
    }
}
