import Synchronization

/// A monotonically increasing count, lock-free (one relaxed atomic add per event), safe from any
/// thread. Read at scrape time.
public final class AtomicCounter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    public func increment(by n: Int = 1) { count.wrappingAdd(n, ordering: .relaxed) }

    public var value: Int { count.load(ordering: .relaxed) }
}

/// A latency histogram with fixed upper bounds (seconds), lock-free: one observation is three
/// relaxed atomic adds (its bucket, the count, the sum in microseconds). Buckets are stored
/// non-cumulatively and summed when read, as Prometheus' `le` buckets are cumulative.
public final class LatencyHistogram: Sendable {
    /// Upper bounds in seconds, ascending; `+Inf` is implicit.
    public let bounds: [Double]
    private let buckets: [AtomicCounter]
    private let total = AtomicCounter()
    private let sumMicroseconds = AtomicCounter()

    /// Default bounds for an HTTP call: 5 ms ... 30 s.
    public static let defaultBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public init(bounds: [Double] = LatencyHistogram.defaultBounds) {
        self.bounds = bounds.sorted()
        self.buckets = (0...bounds.count).map { _ in AtomicCounter() }   // the last one is +Inf
    }

    /// Records one observation of `duration`.
    public func observe(_ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let slot = bounds.firstIndex { seconds <= $0 } ?? bounds.count
        buckets[slot].increment()
        total.increment()
        sumMicroseconds.increment(by: max(0, Int(seconds * 1_000_000)))
    }

    /// Observations so far.
    public var count: Int { total.value }

    /// The histogram's samples (`_bucket` with cumulative `le`, `_sum` in seconds, `_count`), each
    /// with `labels` first.
    public func samples(labels: [(String, String)]) -> [MetricFamily.Sample] {
        var out: [MetricFamily.Sample] = []
        var running = 0
        for (i, bound) in bounds.enumerated() {
            running += buckets[i].value
            out.append(.init(suffix: "_bucket", labels: labels + [("le", PrometheusText.format(bound))], value: Double(running)))
        }
        running += buckets[bounds.count].value
        out.append(.init(suffix: "_bucket", labels: labels + [("le", "+Inf")], value: Double(running)))
        out.append(.init(suffix: "_sum", labels: labels, value: Double(sumMicroseconds.value) / 1_000_000))
        out.append(.init(suffix: "_count", labels: labels, value: Double(running)))
        return out
    }
}
