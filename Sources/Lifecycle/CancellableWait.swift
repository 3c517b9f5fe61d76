/// Suspends the calling task until its continuation is resumed by a signal, or at once when the
/// task is cancelled, so a waiter inside a task group can always be torn down. The one
/// cancellable wait under `Latch` (one-shot, many waiters) and Queue's `Wakeup` (level-triggered,
/// one waiter); `package` so it is shared by the package's modules without being public API.
/// - Parameters:
///   - park: under the signal's lock, either stores the continuation and returns false, or
///     returns true to resume at once (already signalled, or `Task.isCancelled`).
///   - unpark: under the signal's lock, removes and returns the continuation `park` stored, if
///     it is still there (called on cancellation).
package func waitCancellably(park: (CheckedContinuation<Void, Never>) -> Bool,
                             unpark: @Sendable () -> CheckedContinuation<Void, Never>?) async {
    await withTaskCancellationHandler {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if park(c) { c.resume() }
        }
    } onCancel: {
        unpark()?.resume()
    }
}
