import Foundation

/// The one source of time for everything that reads the wall clock or waits: the worker, backoff,
/// token providers, the JWKS cache and the sandbox take a `WallClock` in their `init`, so tests can
/// drive expiry and backoff with a manual clock instead of sleeping.
///
/// - `now`: the current wall-clock instant (UTC, as `Date`).
/// - `sleep(for:)`: suspends for a duration on this clock; throws `CancellationError` when the
///   calling task is cancelled.
public protocol WallClock: Sendable {
    /// The current instant.
    var now: Date { get }
    /// Suspends the calling task for `duration` of this clock's time.
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    func sleep(for duration: Duration) async throws
}

extension WallClock {
    /// Seconds from `now` until `instant` (negative when it has passed).
    public func seconds(until instant: Date) -> Double { instant.timeIntervalSince(now) }
}

/// The real clock: `Date()` for now, `Task.sleep` on the continuous clock for waits.
public struct SystemClock: WallClock {
    public init() {}

    public var now: Date { Date() }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration, tolerance: .zero, clock: .continuous)
    }
}

extension Duration {
    /// The duration as fractional seconds, e.g. for `make_interval(secs => …)` binds and JSON.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }

    /// A duration from fractional seconds; non-finite or negative values become zero.
    public static func seconds(fractional value: Double) -> Duration {
        guard value.isFinite, value > 0 else { return .zero }
        return .nanoseconds(Int64((value * 1e9).rounded()))
    }
}
