import Foundation

/// One job's progress at one sample (`work --progress`, `status --watch`).
public struct ProgressSample: Sendable, Equatable {
    public let jobID: Int64
    public let kind: String
    public let state: String
    public let done: Int
    public let items: Int
    /// Items per second, smoothed; nil until measured (the first sample of a job: never a made-up 0).
    public let rate: Double?
    /// Seconds until done at `rate`; nil while the rate is unknown or 0, or nothing is left.
    public let etaSeconds: Double?
    public let at: Date

    public var percent: Double { items > 0 ? 100 * Double(done) / Double(items) : 100 }
}

/// Turns successive job listings into per-job samples with a smoothed rate and an ETA.
///
/// The rate is an exponentially weighted moving average of the rates between samples (weight
/// `smoothing` for the newest, default 0.3: about the last 3 samples count most). A job's first
/// sample has no rate unless the job already did work since it was created: then its average so far
/// (done / time since creation) seeds it, so a worker started on a half-done job shows a rate at once.
public struct ProgressMeter: Sendable {
    struct Seen: Sendable {
        var done: Int
        var at: Date
        var rate: Double?
    }

    let smoothing: Double
    var seen: [Int64: Seen] = [:]

    public init(smoothing: Double = 0.3) {
        self.smoothing = smoothing
    }

    /// The samples of `jobs` read at `now`, in the order given.
    public mutating func sample(_ jobs: [JobListEntry], at now: Date) -> [ProgressSample] {
        jobs.map { job in
            var rate: Double?
            if let previous = seen[job.id] {
                let elapsed = now.timeIntervalSince(previous.at)
                if elapsed > 0 {
                    let instant = Double(max(0, job.done - previous.done)) / elapsed
                    rate = previous.rate.map { smoothing * instant + (1 - smoothing) * $0 } ?? instant
                } else {
                    rate = previous.rate
                }
            } else if job.done > 0, job.state == "running", now.timeIntervalSince(job.createdAt) > 1 {
                rate = Double(job.done) / now.timeIntervalSince(job.createdAt)
            }
            seen[job.id] = Seen(done: job.done, at: now, rate: rate)
            let left = max(0, job.items - job.done)
            let eta: Double? = left == 0 ? nil : rate.flatMap { $0 > 0 ? Double(left) / $0 : nil }
            return ProgressSample(jobID: job.id, kind: job.kind, state: job.state, done: job.done, items: job.items,
                                  rate: rate, etaSeconds: eta, at: now)
        }
    }

    /// A line for a terminal: `job 12 refresh-validation running  45.0%  4500/10000  812 items/s  ETA 6s`;
    /// `measuring` while the rate is unknown.
    public static func line(_ s: ProgressSample) -> String {
        let rate = s.rate.map { String(format: "%.0f items/s", $0) } ?? "measuring"
        let eta = s.etaSeconds.map { "ETA " + JobReports.duration($0) } ?? (s.done >= s.items ? "done" : "ETA -")
        return "job \(s.jobID) \(s.kind) \(s.state)  " + String(format: "%5.1f%%", s.percent) + "  \(s.done)/\(s.items)  \(rate)  \(eta)"
    }

    /// A JSON line: `at` (ISO 8601 UTC), `job_id`, `kind`, `state`, `done`, `items`, `percent`,
    /// `rate` (items/s, or null until measured), `eta_s` (or null).
    public static func json(_ s: ProgressSample) -> String {
        let object: [String: Any] = [
            "at": JobReports.utc(s.at), "job_id": s.jobID, "kind": s.kind, "state": s.state, "done": s.done, "items": s.items,
            "percent": (s.percent * 10).rounded() / 10, "rate": s.rate.map { ($0 * 10).rounded() / 10 } ?? NSNull(),
            "eta_s": s.etaSeconds.map { $0.rounded() } ?? NSNull(),
        ]
        return JobReports.encode(object)
    }
}
