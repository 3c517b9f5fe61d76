import Synchronization

/// A one-shot event: once `open()` is called, every waiter (present and future) goes on. A
/// waiting task that is cancelled returns at once, so a task group holding a waiter can always be
/// torn down. The building block for a `Service`'s `shutdownGracefully()` (open) and `run()` (wait).
public final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    /// True once `open()` was called.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the latch and releases every waiter; later calls do nothing.
    public func open() {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { s in
            guard !s.isOpen else { return [] }
            s.isOpen = true
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the latch is open, or as soon as the calling task is cancelled.
    public func wait() async {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        await waitCancellably { continuation in
            state.withLock { s in
                if s.isOpen || Task.isCancelled { return true }
                s.waiters[id] = continuation
                return false
            }
        } unpark: {
            state.withLock { $0.waiters.removeValue(forKey: id) }
        }
    }
}
