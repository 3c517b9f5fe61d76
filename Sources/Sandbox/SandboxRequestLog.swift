import Synchronization

/// One Apple-endpoint request (`/auth/*`) as the sandbox's request log keeps it.
public struct SandboxRequestRecord: Sendable, Equatable {
    /// When the handler received the whole request, on the sandbox process's monotonic clock
    /// (real time, whatever the model's `WallClock` says).
    public var arrival: ContinuousClock.Instant
    /// The request path, e.g. `/auth/token`.
    public var path: String
    /// The injected fault (`FaultKind` raw value: `429`, `html`, `stall`, `reset`, …), or nil for
    /// a normal answer.
    public var fault: String?
    /// The HTTP status answered; 0 for a reset connection.
    public var status: Int
    /// The `Retry-After` sent, seconds (on `429` faults only).
    public var retryAfterSeconds: Int?
    /// The delay before the answer (latency plus any stall).
    public var delay: Duration
    /// The `refresh_token` form field of a `/auth/token` request, so a test can pair a retry with
    /// the answer before it. Kept in memory only: never served, printed or logged.
    public var refreshToken: String?
}

/// An opt-in, bounded log of Apple-endpoint requests, for tests that measure what a client did
/// from the server's side (e.g. the gap between a `429` and the retry). Off by default: then a
/// request costs one atomic load. On, it keeps the newest `capacity` records (a ring buffer).
final class SandboxRequestLog: Sendable {
    private struct Ring {
        var capacity = 0
        var records: [SandboxRequestRecord] = []
        /// Where the next record goes once the ring is full.
        var next = 0
    }

    private let enabled = Atomic<Bool>(false)
    private let ring = Mutex(Ring())

    /// Whether requests are being logged.
    var isOn: Bool { enabled.load(ordering: .relaxed) }

    /// Empties the log and logs from now on, keeping at most `capacity` records (at least 1).
    func start(capacity: Int) {
        ring.withLock { $0 = Ring(capacity: max(1, capacity)) }
        enabled.store(true, ordering: .relaxed)
    }

    /// Stops logging; the records are kept.
    func stop() { enabled.store(false, ordering: .relaxed) }

    func append(_ record: SandboxRequestRecord) {
        ring.withLock { r in
            guard r.capacity > 0 else { return }
            if r.records.count < r.capacity {
                r.records.append(record)
            } else {
                r.records[r.next] = record
                r.next = (r.next + 1) % r.capacity
            }
        }
    }

    /// The records kept, oldest first.
    var records: [SandboxRequestRecord] {
        ring.withLock { r in Array(r.records[r.next...] + r.records[..<r.next]) }
    }
}

extension SandboxModel {
    /// Starts (or restarts, emptied) the request log: from now on every `/auth/*` request is
    /// recorded with its arrival time, fault, status and refresh token (see `SandboxRequestRecord`).
    /// - Parameter capacity: how many records to keep; older ones are dropped first.
    public func startRequestLog(capacity: Int = 100_000) { requestLog.start(capacity: capacity) }

    /// Stops recording; `requestRecords()` still returns what was kept.
    public func stopRequestLog() { requestLog.stop() }

    /// The requests recorded since `startRequestLog`, oldest first (at most its capacity).
    public func requestRecords() -> [SandboxRequestRecord] { requestLog.records }
}
