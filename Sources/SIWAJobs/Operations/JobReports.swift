import Foundation
import SIWACore

/// Text and JSON for `jobs list` and `job show`. Times are ISO 8601 UTC; rates are items/s; ETA
/// and durations seconds. No token, code or payload is ever part of a job's listing.
public enum JobReports {
    /// One line per job: id, kind, state, priority, done/items and percent, created, finished.
    public static func table(_ jobs: [JobListEntry]) -> [String] {
        guard !jobs.isEmpty else { return ["no jobs"] }
        let header = ["JOB", "KIND", "STATE", "PRIORITY", "DONE", "PERCENT", "CREATED", "FINISHED"]
        let rows = jobs.map { j -> [String] in
            [String(j.id), IdentifierFormat.printable(j.kind), j.state + (j.pruned ? " (pruned)" : ""), String(j.priority), "\(j.done)/\(j.items)",
             String(format: "%.1f%%", j.percent), utc(j.createdAt), j.finishedAt.map(utc) ?? "-"]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return [line(header)] + rows.map(line)
    }

    /// A job as a JSON object: `id`, `kind`, `state`, `priority`, `items`, `done`, `percent`,
    /// `created_at`, `finished_at` (or null), `paused_reason` (or null), `pruned`.
    public static func object(_ j: JobListEntry) -> [String: Any] {
        ["id": j.id, "kind": j.kind, "state": j.state, "priority": j.priority, "items": j.items, "done": j.done,
         "percent": (j.percent * 10).rounded() / 10, "created_at": utc(j.createdAt),
         "finished_at": j.finishedAt.map(utc) ?? NSNull(), "paused_reason": j.pausedReason ?? NSNull(), "pruned": j.pruned]
    }

    /// A JSON array of `object(_:)`.
    public static func json(_ jobs: [JobListEntry]) -> String {
        encode(jobs.map(object))
    }

    /// `job show`: the job's object plus `item_states`, `outcomes`, `top_apple_errors` (objects
    /// `code`, `items`), `first_result_at`, `last_result_at`, `recent_rate`, `average_rate`,
    /// `remaining`, `eta_s` (nulls when unknown) and `from_summary`.
    public static func json(_ d: JobDetail) -> String {
        var object = Self.object(d.job)
        object["item_states"] = d.itemStates
        object["outcomes"] = d.outcomes
        object["top_apple_errors"] = d.topAppleErrors.map { ["code": $0.code, "items": $0.items] as [String: Any] }
        object["first_result_at"] = d.firstResultAt.map(utc) ?? NSNull()
        object["last_result_at"] = d.lastResultAt.map(utc) ?? NSNull()
        object["recent_rate"] = d.recentRate.map { ($0 * 10).rounded() / 10 } ?? NSNull()
        object["average_rate"] = d.averageRate.map { ($0 * 10).rounded() / 10 } ?? NSNull()
        object["remaining"] = d.remaining
        object["eta_s"] = d.etaSeconds.map { $0.rounded() } ?? NSNull()
        object["from_summary"] = d.fromSummary
        return encode(object)
    }

    /// `job show` for a person.
    public static func lines(_ d: JobDetail) -> [String] {
        let j = d.job
        func counts(_ map: [String: Int]) -> String {
            map.isEmpty ? "-" : map.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        // A row may hold anything a hand-written UPDATE put there: kind and reason are escaped.
        var out = ["job \(j.id) \(IdentifierFormat.printable(j.kind)) [\(j.state)] priority \(j.priority): \(j.done)/\(j.items) done ("
                   + String(format: "%.1f%%", j.percent) + ")" + (d.fromSummary ? ", from its summary (rows pruned)" : "")]
        if let reason = j.pausedReason { out.append("  paused: \(PrintableText.escaped(reason))") }
        out.append("  items: \(counts(d.itemStates))")
        out.append("  outcomes: \(counts(d.outcomes))")
        out.append("  top Apple errors: " + (d.topAppleErrors.isEmpty ? "-" : d.topAppleErrors.map { "\($0.code)=\($0.items)" }
            .joined(separator: " ")))
        out.append("  created \(utc(j.createdAt)); first result \(d.firstResultAt.map(utc) ?? "-"); last result "
                   + "\(d.lastResultAt.map(utc) ?? "-"); finished \(j.finishedAt.map(utc) ?? "-")")
        let rate = d.recentRate.map { String(format: "%.1f items/s (last 60 s)", $0) }
            ?? d.averageRate.map { String(format: "%.1f items/s (average)", $0) } ?? "-"
        out.append("  throughput: \(rate); remaining \(d.remaining); ETA " + (d.etaSeconds.map(duration) ?? "-"))
        return out
    }

    /// `90` -> `1m30s`, `3725` -> `1h02m05s`.
    public static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s >= 3600 { return String(format: "%dh%02dm%02ds", s / 3600, s % 3600 / 60, s % 60) }
        if s >= 60 { return String(format: "%dm%02ds", s / 60, s % 60) }
        return "\(s)s"
    }

    static func encode(_ value: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func utc(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }
}
