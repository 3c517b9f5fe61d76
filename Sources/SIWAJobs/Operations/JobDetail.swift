import Foundation
import Postgres

/// `siwa-jobs job show N`: one job's counts, top Apple errors, timings, throughput and ETA. Read
/// live from its items and results while they exist; from `siwa.job_summaries` once pruned.
public struct JobDetail: Sendable, Equatable {
    /// One Apple `error` code and how many results carry it.
    public struct AppleErrorCount: Sendable, Equatable {
        public let code: String
        public let items: Int
    }

    public var job: JobListEntry
    /// Items by state (`available`, `running`, `succeeded`, `failed`, `discarded`, `cancelled`).
    public var itemStates: [String: Int] = [:]
    /// Results by outcome (kind-specific: `valid`, `invalid`, `succeeded`, `discarded`, ...).
    public var outcomes: [String: Int] = [:]
    /// The most frequent Apple errors, most first (at most 5).
    public var topAppleErrors: [AppleErrorCount] = []
    public var firstResultAt: Date?
    public var lastResultAt: Date?
    /// Results per second over the last 60 seconds (nil when none came in that time).
    public var recentRate: Double?
    /// Results per second between the first and the last result (nil with fewer than 2).
    public var averageRate: Double?
    /// Seconds until the available and running items are done at `recentRate` (else
    /// `averageRate`); nil when nothing is left or no rate is known.
    public var etaSeconds: Double?
    /// Read from the summary (the rows are pruned).
    public var fromSummary = false

    /// Items not yet terminal.
    public var remaining: Int { (itemStates["available"] ?? 0) + (itemStates["running"] ?? 0) }
}

extension JobListing {
    /// The detail of job `id`; nil when no job has that id.
    /// - Throws: `DatabaseError`.
    public func detail(jobID id: Int64) async throws -> JobDetail? {
        guard let entry = try await read("WHERE j.id = \(id)").first else { return nil }
        var detail = JobDetail(job: entry)
        if entry.pruned {
            try await fillFromSummary(&detail)
        } else {
            try await fillLive(&detail)
        }
        if let first = detail.firstResultAt, let last = detail.lastResultAt, last > first {
            detail.averageRate = Double(detail.outcomes.values.reduce(0, +)) / last.timeIntervalSince(first)
        }
        if detail.remaining > 0, let rate = detail.recentRate ?? detail.averageRate, rate > 0 {
            detail.etaSeconds = Double(detail.remaining) / rate
        }
        return detail
    }

    private func fillLive(_ detail: inout JobDetail) async throws {
        let id = detail.job.id
        // An item handed out by range and not finished is still `available` in its row: it is running.
        for row in try await pool.query("""
            SELECT CASE WHEN i.state = 'available' AND NOT i.claim_singly AND i.id <= j.claim_cursor THEN 'running'
                        ELSE i.state END AS state, count(*)::int AS n
            FROM siwa.job_items i JOIN siwa.jobs j ON j.id = i.job_id WHERE i.job_id = \(id) GROUP BY 1
            """) {
            detail.itemStates[try row.decode("state")] = try row.decode("n")
        }
        let groups = try await pool.query("""
            SELECT outcome, apple_error, count(*)::int AS n, min(created_at) AS first_at, max(created_at) AS last_at,
                   count(*) FILTER (WHERE created_at > now() - interval '60 seconds')::int AS recent,
                   count(*) FILTER (WHERE kept)::int AS kept
            FROM siwa.results WHERE job_id = \(id) GROUP BY outcome, apple_error
            """)
        var errors: [String: Int] = [:], recent = 0, kept = 0
        for row in groups {
            let n: Int = try row.decode("n")
            kept += try row.decode("kept", as: Int.self)
            detail.outcomes[try row.decode("outcome"), default: 0] += n
            if let code = try row.decode("apple_error", as: String?.self) { errors[code, default: 0] += n }
            recent += try row.decode("recent", as: Int.self)
            let first: Date = try row.decode("first_at"), last: Date = try row.decode("last_at")
            detail.firstResultAt = min(detail.firstResultAt ?? first, first)
            detail.lastResultAt = max(detail.lastResultAt ?? last, last)
        }
        // A succeeded range item that kept its row (`KindWrites.keepsSucceededRangeItems`) reads
        // running above; its result says it succeeded.
        if kept > 0 {
            detail.itemStates["running", default: 0] -= kept
            detail.itemStates["succeeded", default: 0] += kept
            if detail.itemStates["running"] == 0 { detail.itemStates["running"] = nil }
        }
        detail.topAppleErrors = Self.top(errors)
        if recent > 0 { detail.recentRate = Double(recent) / 60 }
    }

    private func fillFromSummary(_ detail: inout JobDetail) async throws {
        let rows = try await pool.query("""
            SELECT item_states::text AS states, outcomes::text AS outcomes, apple_errors::text AS errors,
                   first_result_at, last_result_at
            FROM siwa.job_summaries WHERE job_id = \(detail.job.id)
            """)
        guard let row = rows.first else { return }
        detail.fromSummary = true
        detail.itemStates = Self.counts(try row.decode("states"))
        detail.outcomes = Self.counts(try row.decode("outcomes"))
        detail.topAppleErrors = Self.top(Self.counts(try row.decode("errors")))
        detail.firstResultAt = try row.decode("first_result_at", as: Date?.self)
        detail.lastResultAt = try row.decode("last_result_at", as: Date?.self)
    }

    static func counts(_ json: String) -> [String: Int] {
        let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] ?? [:]
        return object.compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    static func top(_ errors: [String: Int]) -> [JobDetail.AppleErrorCount] {
        errors.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(5).map { JobDetail.AppleErrorCount(code: $0.key, items: $0.value) }
    }
}
