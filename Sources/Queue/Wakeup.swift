import Synchronization

/// A level-triggered wake-up signal: `signal()` from any thread wakes one `wait()` or, if nobody
/// waits, is remembered for the next. Used for NOTIFY, the jittered poll timer and shutdown.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter {
                s.waiter = nil
                return w
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

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.pending {
                    s.pending = false
                    return true
                }
                s.waiter = c
                return false
            }
            if resumeNow { c.resume() }
        }
    }
}
