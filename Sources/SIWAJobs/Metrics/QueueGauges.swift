import Metrics
import Postgres
import Queue

/// The gauges read from the database at each scrape (or textfile write), in two short statements:
/// the queue of running jobs (items due, scheduled and leased by kind and priority; the age of the
/// oldest due item by kind), and the Apple rate budget (`siwa.rate_budgets_status`). Needs SELECT
/// on `siwa.jobs`, `siwa.job_items` and the view: the `siwa_worker` role has them.
public struct QueueGauges: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// - Throws: `DatabaseError` when a statement fails (the caller reports it as
    ///   `siwa_metrics_database_up 0` rather than failing the scrape).
    public func families() async throws -> [MetricFamily] {
        try await pool.withConnection { conn in
            // Without JIT: the per-lease probes of `ItemCounts` inflate the estimate (`withoutJIT`).
            let queue = try await conn.withoutJIT { try await $0.query("""
                WITH live AS MATERIALIZED (SELECT id, kind, priority, claim_cursor FROM siwa.jobs WHERE state = 'running'),
                per_job AS (
                    SELECT l.kind, l.priority,
                           \(unsafeSQL: ItemCounts.due(job: "l.id", cursor: "l.claim_cursor")) AS due,
                           \(unsafeSQL: ItemCounts.singlyScheduled(job: "l.id")) AS scheduled,
                           \(unsafeSQL: ItemCounts.running(job: "l.id")) AS leased,
                           LEAST((SELECT min(i.run_at) FROM siwa.job_items i WHERE i.job_id = l.id AND i.claim_singly
                                     AND i.state = 'available' AND i.run_at <= now()),
                                 (SELECT i.run_at FROM siwa.job_items i WHERE i.job_id = l.id AND i.id > l.claim_cursor
                                     AND NOT i.claim_singly AND i.state = 'available' ORDER BY i.id LIMIT 1)) AS oldest_due_at
                    FROM live l)
                SELECT kind, priority::int AS priority, sum(due)::bigint AS due, sum(scheduled)::bigint AS scheduled,
                       sum(leased)::bigint AS leased,
                       coalesce(extract(epoch FROM now() - min(oldest_due_at)), 0)::float8 AS oldest_due_s
                FROM per_job
                GROUP BY kind, priority ORDER BY kind, priority
                """) }
            let budgets = try await conn.query("""
                SELECT team_id, endpoint, ceiling_rps::float8 AS ceiling, rate_rps::float8 AS rate,
                       coalesce(learned_limit_rps, 0)::float8 AS learned, paused, count_429::bigint AS n429
                FROM siwa.rate_budgets_status ORDER BY team_id, endpoint
                """)
            return try Self.queueFamilies(queue) + Self.budgetFamilies(budgets)
        }
    }

    static func queueFamilies(_ rows: [PostgresRow]) throws -> [MetricFamily] {
        var due = MetricFamily("siwa_queue_depth", .gauge, help: "items due now of running jobs, by kind and priority")
        var scheduled = MetricFamily("siwa_queue_scheduled", .gauge,
                                     help: "items of running jobs waiting for a later run_at (retries), by kind and priority")
        var leased = MetricFamily("siwa_queue_leased", .gauge, help: "items leased by some worker, by kind and priority")
        var oldest: [String: Double] = [:]
        for row in rows {
            let kind: String = try row.decode("kind")
            let priority: Int = try row.decode("priority")
            let labels = [("kind", kind), ("priority", "\(priority)")]
            due.samples.append(.init(labels: labels, value: Double(try row.decode("due", as: Int64.self))))
            scheduled.samples.append(.init(labels: labels, value: Double(try row.decode("scheduled", as: Int64.self))))
            leased.samples.append(.init(labels: labels, value: Double(try row.decode("leased", as: Int64.self))))
            oldest[kind] = max(oldest[kind] ?? 0, try row.decode("oldest_due_s", as: Double.self))
        }
        let age = MetricFamily("siwa_queue_oldest_due_age_seconds", .gauge,
                               help: "age of the oldest item due now (seconds since its run_at), by kind; 0 when none is due",
                               samples: oldest.sorted { $0.key < $1.key }.map { .init(labels: [("kind", $0.key)], value: $0.value) })
        return [due, scheduled, leased, age]
    }

    static func budgetFamilies(_ rows: [PostgresRow]) throws -> [MetricFamily] {
        var rate = MetricFamily("siwa_rate_budget_rate_rps", .gauge, help: "the team's shared Apple rate now, requests/s")
        var ceiling = MetricFamily("siwa_rate_budget_ceiling_rps", .gauge, help: "the team's configured Apple rate ceiling, requests/s")
        var learned = MetricFamily("siwa_rate_budget_learned_limit_rps", .gauge,
                                   help: "the rate that met the last 429, requests/s (0: none learned)")
        var paused = MetricFamily("siwa_rate_budget_paused", .gauge, help: "1 while a Retry-After pauses the team's calls")
        var throttled = MetricFamily("siwa_rate_budget_429_total", .counter, help: "429 answers the team's budget has recorded")
        for row in rows {
            let team: String = try row.decode("team_id")
            let endpoint: String = try row.decode("endpoint")
            let labels = [("team_id", team), ("endpoint", endpoint)]
            rate.samples.append(.init(labels: labels, value: try row.decode("rate", as: Double.self)))
            ceiling.samples.append(.init(labels: labels, value: try row.decode("ceiling", as: Double.self)))
            learned.samples.append(.init(labels: labels, value: try row.decode("learned", as: Double.self)))
            paused.samples.append(.init(labels: labels, value: try row.decode("paused", as: Bool.self) ? 1 : 0))
            throttled.samples.append(.init(labels: labels, value: Double(try row.decode("n429", as: Int64.self))))
        }
        return [rate, ceiling, learned, paused, throttled]
    }
}
