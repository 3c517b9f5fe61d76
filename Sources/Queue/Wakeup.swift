import Lifecycle
import Synchronization

/// A level-triggered wake-up signal for one waiting task: `signal()` from any thread wakes the
/// `wait()` or, if nobody waits, is remembered for the next. Used for NOTIFY, the jittered poll
/// timer, shutdown, and the flusher's arrivals. A waiting task that is cancelled returns at once.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var next = 0
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter {
                s.waiter = nil
                return w.continuation
            }
            s.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns and clears the pending flag without waiting.
    func consume() -> Bool {
        state.withLock { s in
            defer { s.pending = false }
            return s.pending
        }
    }

    /// Waits for a signal (or returns at once if one is pending, clearing it). One waiter at a time.
    func wait() async {
        let id = state.withLock { s -> Int in
            s.next += 1
            return s.next
        }
        await waitCancellably { c in
            state.withLock { s -> Bool in
                if s.pending {
                    s.pending = false
                    return true
                }
                if Task.isCancelled { return true }
                s.waiter = (id, c)
                return false
            }
        } unpark: {
            state.withLock { s -> CheckedContinuation<Void, Never>? in
                guard let w = s.waiter, w.id == id else { return nil }
                s.waiter = nil
                return w.continuation
            }
        }
    }
}
