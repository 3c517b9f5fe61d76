import Foundation

/// A bounded wait that gave up; `description` names what was awaited, so the failing test says
/// what never happened instead of hanging.
public struct PollTimeout: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ what: String, timeout: Duration) {
        description = "waiting for \(what): not seen within \(timeout)"
    }
}

/// Waits with a deadline, for in-process tests. The deadline is a liveness bound, never a timing
/// check: conditions normally hold long before it, and a test must not assert how fast they do.
public enum Poll {
    /// Polls `condition` every `interval` until it returns true.
    /// - Parameters:
    ///   - what: names the condition in the failure ("every item released").
    ///   - timeout: the liveness bound (default 60 s).
    ///   - interval: the pause between polls (default 5 ms).
    /// - Throws: `PollTimeout` naming `what` once `timeout` has passed with the condition false;
    ///   anything `condition` or the sleep throws (e.g. `CancellationError`).
    public static func until(
        _ what: String,
        timeout: Duration = .seconds(60),
        interval: Duration = .milliseconds(5),
        _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw PollTimeout(what, timeout: timeout) }
            try await Task.sleep(for: interval)
        }
    }

    /// `until` for synchronous tests: blocks the calling thread between polls.
    /// - Throws: `PollTimeout` naming `what`; anything `condition` throws.
    public static func blockingUntil(
        _ what: String,
        timeout: Duration = .seconds(60),
        interval: Duration = .milliseconds(1),
        _ condition: () throws -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw PollTimeout(what, timeout: timeout) }
            Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
        }
    }
}
