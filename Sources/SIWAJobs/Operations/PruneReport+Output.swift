import Foundation

extension PruneReport {
    /// Lines for a person: what went (or would go) and what stayed.
    public var lines: [String] {
        let verb = dryRun ? "would drop" : "dropped"
        var out = dropped.map { "\(verb) partition \($0.name): \($0.jobs) jobs" + (dryRun ? "" : ", \($0.items) items") }
        out.append("\(dryRun ? "dry run: " : "")partitions \(verb) \(dropped.count), kept \(kept)"
                   + (busy.isEmpty ? "" : ", busy \(busy.count) (\(busy.joined(separator: ", ")); run prune again)")
                   + "; job summaries \(dryRun ? "to write" : "written") \(summariesWritten)"
                   + "; audit rows \(dryRun ? "to delete" : "deleted") \(auditRowsDeleted) (older than \(policy.auditDays) days)"
                   + "; notification payloads \(dryRun ? "to drop" : "dropped") \(payloadsDropped)"
                   + " (processed more than \(policy.payloadDays) days ago)")
        return out
    }

    /// One JSON object: `dry_run`, `job_days`, `audit_days`, `payload_days`, `dropped` (objects
    /// `partition`, `jobs`, `items`), `kept`, `busy`, `summaries_written`, `audit_rows_deleted`,
    /// `payloads_dropped`.
    public var json: String {
        let object: [String: Any] = [
            "dry_run": dryRun, "job_days": policy.jobDays, "audit_days": policy.auditDays, "payload_days": policy.payloadDays,
            "dropped": dropped.map { ["partition": $0.name, "jobs": $0.jobs, "items": $0.items] as [String: Any] },
            "kept": kept, "busy": busy, "summaries_written": summariesWritten,
            "audit_rows_deleted": auditRowsDeleted, "payloads_dropped": payloadsDropped,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
