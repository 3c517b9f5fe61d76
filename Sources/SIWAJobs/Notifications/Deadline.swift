import Synchronization

/// An operation gave no answer within its deadline.
public struct DeadlineExceeded: Error, CustomStringConvertible, Sendable {
    /// What was waited for, e.g. `database`.
    public let what: String
    /// The deadline, seconds.
    public let seconds: Double

    public var description: String { "no answer from the \(what) within \(seconds) s" }
}

/// Bounds how long a caller waits for work that may block without end, e.g. a libpq call to a
/// frozen PostgreSQL: a blocked libpq call cannot be interrupted, `statement_timeout` needs a live
/// server, and a pool checkout cannot be cancelled.
public enum Deadline {
    /// Runs `operation` in a new task and returns its result, or throws `DeadlineExceeded` once
    /// `seconds` pass first. The operation is neither cancelled nor awaited then: it keeps what it
    /// holds (e.g. a pooled connection) until it returns by itself, and its result is dropped.
    /// - Throws: `DeadlineExceeded`, or what `operation` throws.
    public static func run<T: Sendable>(seconds: Double, waitingFor what: String,
                                        _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let slot = ContinuationSlot<T>()
        return try await withCheckedThrowingContinuation { continuation in
            slot.set(continuation)
            let timer = Task {
                try? await Task.sleep(for: .seconds(max(0, seconds)))
                if !Task.isCancelled { slot.resume(with: .failure(DeadlineExceeded(what: what, seconds: seconds))) }
            }
            Task {
                do {
                    slot.resume(with: .success(try await operation()))
                } catch {
                    slot.resume(with: .failure(error))
                }
                timer.cancel()
            }
        }
    }
}

/// A continuation resumed once, by whichever side comes first.
private final class ContinuationSlot<T: Sendable>: Sendable {
    private let slot = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        slot.withLock { $0 = continuation }
    }

    func resume(with result: Result<T, any Error>) {
        slot.withLock { s -> CheckedContinuation<T, any Error>? in
            defer { s = nil }
            return s
        }?.resume(with: result)
    }
}
