import Dispatch
import Foundation
import Synchronization

/// The process's one source of Unix signals, as an `AsyncSequence` of signal numbers.
///
/// Creating it sets the signals' disposition to `SIG_IGN` (so the default action, termination,
/// never runs) and delivers them through `DispatchSourceSignal`s on a private queue. Keep the
/// value alive for as long as the signals should be caught; `cancel()` (or deinit) stops delivery.
/// Used by `ServiceGroup`; nothing else in the code installs signal handlers.
public final class SignalSource: AsyncSequence, Sendable {
    public typealias Element = Int32

    private let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    // Set once in init, only cancelled afterwards; DispatchSource is thread-safe.
    nonisolated(unsafe) private let sources: [any DispatchSourceSignal]

    /// - Parameter signals: the signal numbers to catch, e.g. `[SIGTERM, SIGINT]`.
    public init(_ signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .unbounded)
        self.stream = stream
        self.continuation = continuation
        let queue = DispatchQueue(label: "siwa-jobs.signals")
        var sources: [any DispatchSourceSignal] = []
        for signo in signals {
            // Once per process and signal: libdispatch installs its own handler with the first
            // source for a signal, and setting SIG_IGN again later would silently replace it.
            if Self.ignored.withLock({ $0.insert(signo).inserted }) { signal(signo, SIG_IGN) }
            let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
            source.setEventHandler { continuation.yield(signo) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Signals whose disposition this process has set to `SIG_IGN` already.
    private static let ignored = Mutex<Set<Int32>>([])

    deinit { cancel() }

    /// Stops delivering signals and finishes the sequence. The dispositions stay `SIG_IGN`.
    public func cancel() {
        sources.forEach { $0.cancel() }
        continuation.finish()
    }

    public func makeAsyncIterator() -> AsyncStream<Int32>.AsyncIterator {
        stream.makeAsyncIterator()
    }
}
