import Foundation
import Metrics
import Queue

/// What `work` exposes (`--metrics-port`, `--metrics-file`): items by kind and outcome (as the
/// database accepted them), items in flight, the last success per kind, Apple calls and their
/// latency, and the database's gauges (`QueueGauges`). Everything in-process is read from atomics
/// or from counts the flusher keeps per batch; only the gauges cost a round trip, at scrape time.
public struct WorkerMetrics: Sendable {
    let worker: Worker
    let apple: AppleCallMetrics
    let gauges: QueueGauges?

    /// - Parameter gauges: nil leaves the database's gauges out.
    public init(worker: Worker, apple: AppleCallMetrics, gauges: QueueGauges?) {
        self.worker = worker
        self.apple = apple
        self.gauges = gauges
    }

    /// The exposition text. A database that cannot be read gives `siwa_metrics_database_up 0`
    /// and no gauges, never a failed scrape.
    /// - Parameter previous: the last textfile written (a drain's `--metrics-file`): a kind's
    ///   last-success time it holds is kept when this run had no success of that kind, so the
    ///   alert on "no success for a day" keeps its input across runs.
    public func render(previous: String? = nil) async -> String {
        var families = processFamilies(previous: previous)
        families += apple.families
        if let gauges {
            do {
                families += try await gauges.families()
                families.append(.single("siwa_metrics_database_up", .gauge, help: "1 when the gauges could be read from the database", value: 1))
            } catch {
                families.append(.single("siwa_metrics_database_up", .gauge, help: "1 when the gauges could be read from the database", value: 0))
            }
        }
        return PrometheusText.render(families)
    }

    func processFamilies(previous: String?) -> [MetricFamily] {
        var items = MetricFamily("siwa_jobs_items_total", .counter,
                                 help: "items this process finished, by kind and outcome, as the database accepted them")
        for (kind, tallies) in worker.acceptedByKind.sorted(by: { $0.key < $1.key }) {
            for tally in CompletionTally.allCases {
                guard let label = tally.label, let n = tallies[tally] else { continue }
                items.samples.append(.init(labels: [("kind", kind), ("outcome", label)], value: Double(n)))
            }
        }
        var success = Self.lastSuccess(in: previous)
        for (kind, at) in worker.lastSuccessByKind { success[kind] = at.timeIntervalSince1970 }
        let last = MetricFamily("siwa_jobs_last_success_timestamp_seconds", .gauge,
                                help: "when an item of the kind last succeeded, seconds since 1970 (for alerting)",
                                samples: success.sorted { $0.key < $1.key }.map { .init(labels: [("kind", $0.key)], value: $0.value) })
        return [
            items,
            .single("siwa_jobs_items_in_flight", .gauge, help: "items this process holds a lease on now", value: Double(worker.itemsInFlight)),
            last,
        ]
    }

    /// The `siwa_jobs_last_success_timestamp_seconds{kind="..."}` values of an earlier text.
    static func lastSuccess(in text: String?) -> [String: Double] {
        guard let text else { return [:] }
        let prefix = "siwa_jobs_last_success_timestamp_seconds{kind=\""
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            let rest = line.dropFirst(prefix.count)
            guard let close = rest.range(of: "\"} ") else { continue }
            let kind = String(rest[..<close.lowerBound])
            if let value = Double(rest[close.upperBound...]), !kind.contains("\\") { out[kind] = value }
        }
        return out
    }
}

/// What `notifications serve` exposes (`--metrics-port`): requests by HTTP status, counted
/// lock-free. The receiver's role reads no queue tables, so there are no database gauges.
public final class ReceiverMetrics: Sendable {
    /// Statuses the receiver answers; any other counts as `other`.
    static let statuses = [200, 400, 404, 405, 413, 415, 503]
    private let counters = (0...ReceiverMetrics.statuses.count).map { _ in AtomicCounter() }

    public init() {}

    /// Counts one answered request.
    public func record(status: Int) {
        counters[Self.statuses.firstIndex(of: status) ?? Self.statuses.count].increment()
    }

    public func render(inFlight: Int) -> String {
        var requests = MetricFamily("siwa_notifications_requests_total", .counter, help: "requests answered by the receiver, by HTTP status")
        for (i, status) in Self.statuses.enumerated() {
            requests.samples.append(.init(labels: [("status", "\(status)")], value: Double(counters[i].value)))
        }
        requests.samples.append(.init(labels: [("status", "other")], value: Double(counters[Self.statuses.count].value)))
        return PrometheusText.render([
            requests,
            .single("siwa_notifications_requests_in_flight", .gauge, help: "requests being handled now", value: Double(inFlight)),
        ])
    }
}
