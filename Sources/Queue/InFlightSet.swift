import Synchronization

/// Ids of items this worker holds a lease on, for heartbeats.
final class InFlightSet: Sendable {
    private let ids = Mutex(Set<Int64>())
    func insert(_ new: [Int64]) { ids.withLock { $0.formUnion(new) } }
    func remove(_ old: [Int64]) { ids.withLock { $0.subtract(old) } }
    var snapshot: [Int64] { ids.withLock { Array($0) } }
}
