import Foundation

/// Waits with a deadline. Every polling loop in the integration tests goes through this, so a
/// worker that dies early, or a condition that never comes, fails the test with a message naming
/// what it waited for instead of hanging CI. The deadline is a liveness bound, never a timing
/// check: conditions normally hold long before it.
enum Eventually {
    /// Polls `condition` every `interval` until it is true.
    /// - Parameters:
    ///   - what: names the condition in the failure message ("300 results written").
    ///   - process: when given, a process the condition depends on: if it exits first, the wait
    ///     fails at once, quoting the end of its stderr.
    ///   - timeout: the liveness bound (default 120 s).
    /// - Throws: `TestFailure` naming `what` when the deadline passes or `process` exited.
    static func wait(
        _ what: String,
        while process: BinaryProcess? = nil,
        timeout: Duration = .seconds(120),
        interval: Duration = .milliseconds(20),
        until condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if try await condition() { return }
            if let process, !process.process.isRunning {
                if try await condition() { return }
                throw TestFailure("waiting for \(what): the process exited with status \(process.process.terminationStatus) first; stderr: \(process.stderr.suffix(800))")
            }
            if ContinuousClock.now >= deadline {
                throw TestFailure("waiting for \(what): not seen within \(timeout)")
            }
            try await Task.sleep(for: interval)
        }
    }
}
