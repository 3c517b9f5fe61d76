import Queue
import Synchronization

/// A `LogSink` that keeps lines in memory, for tests that read or silence logs.
public final class MemoryLogSink: LogSink {
    private let lines = Mutex<[String]>([])

    public init() {}

    public func write(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    /// Every line written so far.
    public var captured: [String] { lines.withLock { $0 } }
}
