import Foundation

/// `siwa-jobs workers`: the live processes of the registry as a text table or JSON.
public enum WorkersReport {
    /// The table's header and one line per worker, columns aligned; then `N live workers`.
    /// Columns: id, host, pid, version, command, started (UTC), last heartbeat age, concurrency,
    /// kinds, items in flight, Apple rate held (requests/s; `-` when not reported).
    public static func table(_ workers: [LiveWorker]) -> [String] {
        guard !workers.isEmpty else { return ["no live workers"] }
        let header = ["WORKER", "HOST", "PID", "VERSION", "COMMAND", "STARTED", "HEARTBEAT", "CONCURRENCY", "KINDS",
                      "IN_FLIGHT", "RATE"]
        let rows = workers.map { w -> [String] in
            let r = w.registration
            return [r.workerID, r.host, String(r.pid), r.version, r.command, utc(r.startedAt),
                    String(format: "%.1fs ago", w.heartbeatAgeSeconds), String(r.concurrency),
                    r.kinds.isEmpty ? "-" : r.kinds.joined(separator: ","), String(w.load.inFlight),
                    w.load.appleRate.map { String(format: "%.1f/s", $0) } ?? "-"]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return [line(header)] + rows.map(line) + ["\(workers.count) live worker\(workers.count == 1 ? "" : "s")"]
    }

    /// A JSON array, one object per worker: `worker_id`, `host`, `pid`, `version`, `command`,
    /// `started_at` (ISO 8601 UTC), `heartbeat_age_s`, `concurrency`, `kinds`, `in_flight`,
    /// `apple_rate` (requests/s, or null).
    public static func json(_ workers: [LiveWorker]) -> String {
        let objects: [[String: Any]] = workers.map { w in
            let r = w.registration
            return ["worker_id": r.workerID, "host": r.host, "pid": Int(r.pid), "version": r.version, "command": r.command,
                    "started_at": utc(r.startedAt), "heartbeat_age_s": w.heartbeatAgeSeconds, "concurrency": r.concurrency,
                    "kinds": r.kinds, "in_flight": w.load.inFlight, "apple_rate": w.load.appleRate ?? NSNull()]
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private static func utc(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }
}
