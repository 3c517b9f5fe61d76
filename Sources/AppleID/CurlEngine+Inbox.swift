import CCurl

extension CurlEngine {
    /// What other threads hand the loop, under the engine's `inbox` Mutex: transfers to begin,
    /// transfers to abort, executor jobs, and the stop request. Whoever adds to it writes the
    /// loop's eventfd once per loop step (`wake`).
    struct Inbox {
        var submissions: [CurlTransfer] = []
        var cancellations: [Int] = []
        /// Jobs of tasks that prefer this engine as their executor, enqueued from other threads.
        var jobs: [UnownedJob] = []
        var stopping = false
        var stopped = false
        /// The eventfd was written since the loop last took the inbox: later callers need not
        /// write it again (one wake-up per loop step, not one system call per submission).
        var woken = false

        /// Writes the loop's eventfd unless it was written since the loop last took the inbox.
        mutating func wake(_ events: UnsafeMutablePointer<ccurl_events>) {
            guard !woken else { return }
            woken = true
            ccurl_events_wake(events)
        }
    }
}
