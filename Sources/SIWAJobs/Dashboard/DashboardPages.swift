import Foundation
import Postgres

/// The dashboard's pages, server-rendered: each reads its views through a `DashboardReader`
/// session and returns a whole HTML document (inline CSS and SVG, no script, a meta refresh).
/// Every value from the database goes through `HTML` interpolation, so it is escaped.
public enum DashboardPages {
    typealias Row = [String: String]

    /// The navigation: path and title of every page.
    static let pages: [(String, String)] = [
        ("/", "Jobs"), ("/tokens", "Token health"), ("/notifications", "Notifications"),
        ("/transfers", "Transfers"), ("/workers", "Workers and rate budget"),
    ]

    /// A whole document around `body`, refreshing itself every `refreshSeconds`.
    static func document(title: String, path: String, refreshSeconds: Int, body: HTML) -> HTML {
        let nav: [HTML] = pages.map { page in
            page.0 == path ? "<a class=\"here\" href=\"\(page.0)\">\(page.1)</a>" : "<a href=\"\(page.0)\">\(page.1)</a>"
        }
        return """
            <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="\(refreshSeconds)">\
            <title>\(title) · siwa-jobs</title><style>\(style)</style></head><body><nav>\(nav)</nav><main>\
            <h1>\(title)</h1>\(body)</main><footer>siwa-jobs dashboard · read-only · refreshes every \(refreshSeconds) s</footer>\
            </body></html>
            """
    }

    static let style: HTML = """
        body{font:14px system-ui,sans-serif;margin:0;color:#1d2433}nav{background:#1d2433;padding:8px 16px}\
        nav a{color:#cfd6e4;margin-right:16px;text-decoration:none}nav a.here{color:#fff;font-weight:600}\
        main{padding:8px 16px}table{border-collapse:collapse;margin:8px 0 16px}td,th{padding:3px 10px;text-align:left;\
        border-bottom:1px solid #e4e7ec}th{background:#f4f6f9}.num{text-align:right}.empty{color:#667}\
        .key{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}footer{color:#889;padding:16px}\
        .state-paused{color:#b26b00}.state-running{color:#1f6fd0}.warn{color:#b3261e}
        """

    /// A table: a header row, then one row per entry (already `HTML` cells).
    static func table(_ header: [String], _ rows: [[HTML]], empty: String = "none") -> HTML {
        guard !rows.isEmpty else { return "<p class=\"empty\">\(empty)</p>" }
        let head: [HTML] = header.map { "<th>\($0)</th>" }
        let body: [HTML] = rows.map { cells in "<tr>\(cells.map { "<td>\($0)</td>" as HTML })</tr>" }
        return "<table><tr>\(head)</tr>\(body)</table>"
    }

    static func int(_ row: Row, _ column: String) -> Int { row[column].flatMap { Int($0) } ?? 0 }
    static func double(_ row: Row, _ column: String) -> Double { row[column].flatMap { Double($0) } ?? 0 }

    /// Items per second over the job's results so far, and the time left at that rate; nil while
    /// fewer than two seconds of results exist.
    static func rateAndETA(done: Int, total: Int, elapsedSeconds: Double) -> (rate: Double, eta: String)? {
        guard elapsedSeconds >= 2, done > 0 else { return nil }
        let rate = Double(done) / elapsedSeconds
        let left = Double(max(0, total - done)) / rate
        return (rate, duration(left))
    }

    /// `1h 02m`, `3m 20s`, `12s`.
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s >= 3600 { return String(format: "%dh %02dm", s / 3600, (s % 3600) / 60) }
        if s >= 60 { return String(format: "%dm %02ds", s / 60, s % 60) }
        return "\(s)s"
    }

    // MARK: - Jobs

    /// `/`: the latest 100 jobs with progress bars, rates and ETAs.
    static func jobs(_ session: DashboardReader.Session, refreshSeconds: Int) async throws -> HTML {
        let rows = try await session.rows("""
            SELECT job_id, kind, job_state, priority, paused_reason, items, terminal, succeeded, failed, discarded, running,
                   to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created,
                   coalesce(extract(epoch FROM last_result_at - first_result_at), 0)::float8 AS elapsed_s
            FROM siwa.dashboard_jobs ORDER BY job_id DESC LIMIT 100
            """)
        let cells: [[HTML]] = rows.map { r in
            let items = int(r, "items"), done = int(r, "terminal")
            let state = r["job_state"] ?? ""
            let speed = rateAndETA(done: done, total: items, elapsedSeconds: double(r, "elapsed_s"))
            let rate: HTML = speed.map { "\(String(format: "%.1f", $0.rate))/s" } ?? "–"
            let eta: HTML = state == "completed" ? "done" : speed.map { "\($0.eta)" } ?? "–"
            let job = r["job_id"] ?? ""
            return ["<a href=\"/jobs/\(job)\">\(job)</a>", "\(r["kind"])", "<span class=\"state-\(state)\">\(state)</span>\(r["paused_reason"].map { " <small>\($0)</small>" as HTML } ?? "")",
                    "\(r["priority"])", SVGCharts.progress(done: done, total: items), "\(done) / \(items)",
                    "\(int(r, "failed") + int(r, "discarded"))", rate, eta, "\(r["created"])"]
        }
        let body = table(["job", "kind", "state", "priority", "progress", "done", "failed", "rate", "ETA", "created (UTC)"], cells,
                         empty: "no jobs yet")
        return document(title: "Jobs", path: "/", refreshSeconds: refreshSeconds, body: body)
    }

    /// `/jobs/N`: the job's outcomes and Apple errors as charts, and its latest non-success results.
    /// - Returns: nil when there is no such job.
    static func job(_ id: Int64, _ session: DashboardReader.Session, refreshSeconds: Int) async throws -> HTML? {
        guard let job = try await session.rows("""
            SELECT job_id, kind, job_state, priority, paused_reason, items, terminal, succeeded, failed, discarded, running, available,
                   coalesce(extract(epoch FROM last_result_at - first_result_at), 0)::float8 AS elapsed_s
            FROM siwa.dashboard_jobs WHERE job_id = \(id)
            """).first else { return nil }
        let outcomes = try await session.rows("""
            SELECT outcome, coalesce(apple_error, '') AS apple_error, coalesce(http_status::text, '') AS http_status, items::text AS items
            FROM siwa.job_outcomes WHERE job_id = \(id) ORDER BY items DESC
            """)
        let errors = try await session.rows("""
            SELECT item_id, external_user_id, outcome, apple_error, http_status, attempt,
                   to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS at
            FROM siwa.dashboard_job_errors WHERE job_id = \(id) ORDER BY created_at DESC, item_id DESC LIMIT 50
            """)
        let items = int(job, "items"), done = int(job, "terminal")
        var byOutcome: [String: Double] = [:], byError: [String: Double] = [:]
        for o in outcomes {
            byOutcome[o["outcome"] ?? "", default: 0] += double(o, "items")
            let error = o["apple_error"] ?? ""
            if !error.isEmpty { byError["\(error) (HTTP \(o["http_status"] ?? "?"))", default: 0] += double(o, "items") }
        }
        let outcomeBars = byOutcome.sorted { $0.value > $1.value }.map {
            SVGCharts.Bar($0.key, $0.value, color: ["valid", "ok", "revoked_or_invalid", "migrated", "exported", "applied"].contains($0.key) ? "#3c9a5f" : "#c0392b")
        }
        let errorBars = byError.sorted { $0.value > $1.value }.map { SVGCharts.Bar($0.key, $0.value, color: "#c0392b") }
        let speed = rateAndETA(done: done, total: items, elapsedSeconds: double(job, "elapsed_s"))
        let state = job["job_state"] ?? ""
        let summary: HTML = """
            <p>\(job["kind"]) · <span class="state-\(state)">\(state)</span> · priority \(job["priority"]) · \
            \(SVGCharts.progress(done: done, total: items, width: 320)) · \(done) of \(items) done, \(job["running"]) leased, \
            \(job["available"]) waiting\(speed.map { " · \(String(format: "%.1f", $0.rate)) items/s · ETA \(state == "completed" ? "done" : $0.eta)" as HTML } ?? "")</p>\
            \(job["paused_reason"].map { "<p class=\"warn\">paused: \($0)</p>" as HTML } ?? "")
            """
        let errorRows: [[HTML]] = errors.map { e in
            ["\(e["item_id"])", "<code>\(e["external_user_id"])</code>", "\(e["outcome"])", "\(e["apple_error"])",
             "\(e["http_status"])", "\(e["attempt"])", "\(e["at"])"]
        }
        let body: HTML = """
            \(summary)<h2>Outcomes</h2>\(SVGCharts.bars(outcomeBars, id: "outcomes"))<h2>Apple errors</h2>\
            \(SVGCharts.bars(errorBars, id: "apple-errors"))<h2>Latest items that did not succeed plainly</h2>\
            \(table(["item", "user (external id)", "outcome", "Apple error", "HTTP", "attempt", "at (UTC)"], errorRows, empty: "none"))
            """
        return document(title: "Job \(id)", path: "/jobs", refreshSeconds: refreshSeconds, body: body)
    }
}
