import Foundation
import Postgres

extension DashboardPages {
    /// `/tokens`: refresh-token verdicts per client and day (the validations' results, last 30
    /// days) as stacked columns, and the accounts by token status now.
    static func tokens(_ session: DashboardReader.Session, refreshSeconds: Int) async throws -> HTML {
        let daily = try await session.rows("""
            SELECT day::text AS day, team_id, client_id, valid::text AS valid, invalid::text AS invalid, other::text AS other
            FROM siwa.dashboard_token_health_daily WHERE day > current_date - 30 ORDER BY team_id, client_id, day
            """)
        let now = try await session.rows("""
            SELECT team_id, client_id, token_status, accounts::text AS accounts, checked_last_24h::text AS checked,
                   to_char(last_checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS last_checked
            FROM siwa.token_health ORDER BY team_id, client_id, token_status
            """)
        var clients: [String: [(String, [Double])]] = [:]
        for d in daily {
            let key = "\(d["team_id"] ?? "") / \(d["client_id"] ?? "")"
            clients[key, default: []].append((d["day"] ?? "", [double(d, "valid"), double(d, "invalid"), double(d, "other")]))
        }
        let series = [("valid", "#3c9a5f"), ("invalid", "#c0392b"), ("other", "#9aa3b2")]
        let charts: [HTML] = clients.sorted { $0.key < $1.key }.enumerated().map { index, client in
            "<h2>\(client.key)</h2>\(SVGCharts.stackedColumns(days: client.value, series: series, id: "token-health-\(index)"))"
        }
        let rows: [[HTML]] = now.map { r in
            ["\(r["team_id"])", "\(r["client_id"])", "\(r["token_status"])", "\(r["accounts"])", "\(r["checked"])", "\(r["last_checked"])"]
        }
        let body: HTML = """
            <p>Verdicts of the nightly validations per day (UTC), per team and client.</p>\
            \(charts.isEmpty ? ["<p class=\"empty\">no validation results yet</p>"] : charts)<h2>Accounts by token status now</h2>\
            \(table(["team", "client", "token status", "accounts", "checked in 24 h", "last checked (UTC)"], rows, empty: "no accounts"))
            """
        return document(title: "Token health", path: "/tokens", refreshSeconds: refreshSeconds, body: body)
    }

    /// `/notifications`: the latest 100 notifications (no payload, jti, sub or email) and counts
    /// by event type and outcome.
    static func notifications(_ session: DashboardReader.Session, refreshSeconds: Int) async throws -> HTML {
        let latest = try await session.rows("""
            SELECT id, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS received, verification, event_type,
                   client_id, outcome, rejection_code, planned_job_id,
                   to_char(processed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS processed
            FROM siwa.dashboard_notifications ORDER BY id DESC LIMIT 100
            """)
        let counts = try await session.rows("""
            SELECT coalesce(event_type, '(unread)') || ' · ' || coalesce(outcome, verification) AS label, count(*)::text AS n
            FROM siwa.dashboard_notifications GROUP BY 1 ORDER BY count(*) DESC LIMIT 20
            """)
        let rows: [[HTML]] = latest.map { n in
            ["\(n["id"])", "\(n["received"])", "\(n["verification"])", "\(n["event_type"])", "\(n["client_id"])",
             "\(n["outcome"])", "\(n["rejection_code"].flatMap { $0.isEmpty ? nil : $0 })", "\(n["planned_job_id"])", "\(n["processed"])"]
        }
        let bars = counts.map { SVGCharts.Bar($0["label"] ?? "", double($0, "n")) }
        let body: HTML = """
            \(SVGCharts.bars(bars, id: "notification-outcomes"))<h2>Latest</h2>\
            \(table(["id", "received (UTC)", "verification", "event", "client", "outcome", "rejected", "job", "processed (UTC)"], rows,
                    empty: "no notifications received"))
            """
        return document(title: "Notifications inbox", path: "/notifications", refreshSeconds: refreshSeconds, body: body)
    }

    /// `/transfers`: transfer jobs with their 60-day windows and the days left.
    static func transfers(_ session: DashboardReader.Session, refreshSeconds: Int) async throws -> HTML {
        let rows = try await session.rows("""
            SELECT job_id, direction, team_id, client_id, peer_team_id, transfer_date::text AS transfer_date,
                   window_closes_on::text AS closes, days_left::text AS days_left, job_state, items, succeeded, failed, discarded
            FROM siwa.transfer_status ORDER BY job_id DESC LIMIT 100
            """)
        let cells: [[HTML]] = rows.map { t in
            let left = int(t, "days_left")
            let days: HTML = left < 0 ? "<span class=\"warn\">closed</span>" : left <= 7 ? "<span class=\"warn\">\(left)</span>" : "\(left)"
            return ["<a href=\"/jobs/\(t["job_id"] ?? "")\">\(t["job_id"])</a>", "\(t["direction"])", "\(t["team_id"])", "\(t["client_id"])",
                    "\(t["peer_team_id"])", "\(t["transfer_date"])", "\(t["closes"])", days, "\(t["job_state"])",
                    SVGCharts.progress(done: int(t, "succeeded") + int(t, "failed") + int(t, "discarded"), total: int(t, "items"))]
        }
        let body = table(["job", "direction", "team", "client", "peer team", "transfer date", "window closes", "days left", "state",
                          "progress"], cells, empty: "no transfer jobs")
        return document(title: "Transfer windows", path: "/transfers", refreshSeconds: refreshSeconds, body: body)
    }

    /// `/workers`: the live workers (`siwa.live_workers`) and the Apple rate budget per team.
    static func workers(_ session: DashboardReader.Session, refreshSeconds: Int) async throws -> HTML {
        let workers = try await session.rows("""
            SELECT worker_id, host, pid, version, command, concurrency, array_to_string(kinds, ', ') AS kinds, in_flight,
                   coalesce(round(apple_rate::numeric, 1)::text, '') AS apple_rate, round(heartbeat_age_s::numeric, 1)::text AS age
            FROM siwa.live_workers ORDER BY command, worker_id
            """)
        let budgets = try await session.rows("""
            SELECT team_id, endpoint, ceiling_rps::text AS ceiling, rate_rps::text AS rate, coalesce(learned_limit_rps::text, '') AS learned,
                   paused::text AS paused, count_429::text AS n429
            FROM siwa.rate_budgets_status ORDER BY team_id, endpoint
            """)
        let workerRows: [[HTML]] = workers.map { w in
            ["\(w["worker_id"])", "\(w["host"])", "\(w["pid"])", "\(w["version"])", "\(w["command"])", "\(w["concurrency"])",
             "\(w["kinds"])", "\(w["in_flight"])", "\(w["apple_rate"])", "\(w["age"]) s ago"]
        }
        let bars = budgets.map { b in
            SVGCharts.Bar("\(b["team_id"] ?? "") \(b["endpoint"] ?? "")", double(b, "rate"), color: b["paused"] == "true" ? "#c0392b" : "#4a7bd0")
        }
        let budgetRows: [[HTML]] = budgets.map { b in
            ["\(b["team_id"])", "\(b["endpoint"])", "\(b["ceiling"])", "\(b["rate"])", "\(b["learned"])", "\(b["paused"])", "\(b["n429"])"]
        }
        let body: HTML = """
            <h2>Live workers</h2>\(table(["worker", "host", "pid", "version", "command", "concurrency", "kinds", "in flight",
                                           "Apple rate/s", "heartbeat"], workerRows, empty: "no live workers"))\
            <h2>Apple rate budget (requests/s now)</h2>\(SVGCharts.bars(bars, id: "rate-budget"))\
            \(table(["team", "endpoint", "ceiling/s", "rate/s", "learned limit/s", "paused", "429s"], budgetRows, empty: "no rate budget in use"))
            """
        return document(title: "Workers and rate budget", path: "/workers", refreshSeconds: refreshSeconds, body: body)
    }
}
