import Postgres

/// `siwa-jobs job resume N` / `siwa-jobs job cancel N`.
enum JobCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: [])
        guard args.positionals.count == 2, let action = args.positionals.first,
              let id = Int64(args.positionals[1]), id > 0 else {
            throw UsageError(message: "job: expected 'job resume N' or 'job cancel N' with a job id")
        }
        let connection = try await PostgresConnection.connect(settings.postgres)
        defer { connection.close() }
        let changed: Int
        switch action {
        case "resume":
            changed = try await connection.execute("""
                WITH j AS (UPDATE siwa.jobs SET state = 'running', paused_reason = NULL
                           WHERE id = \(id) AND state = 'paused' RETURNING id, kind)
                SELECT pg_notify('siwa_jobs', kind) FROM j
                """)
        case "cancel":
            changed = try await connection.transaction { tx in
                let n = try await tx.execute("""
                    UPDATE siwa.jobs SET state = 'cancelled', finished_at = now()
                    WHERE id = \(id) AND state IN ('running', 'paused')
                    """)
                if n > 0 {
                    try await tx.execute("""
                        UPDATE siwa.job_items SET state = 'cancelled', finished_at = now(), lease_owner = NULL
                        WHERE job_id = \(id) AND state = 'available'
                        """)
                }
                return n
            }
        default:
            throw UsageError(message: "job: unknown action '\(action)' (resume or cancel)")
        }
        guard changed > 0 else {
            let rows = try await connection.query("SELECT state FROM siwa.jobs WHERE id = \(id)")
            guard let state: String = try rows.first?.decode("state") else {
                SIWAJobsCommand.fail("job \(id) not found")
                return 1
            }
            SIWAJobsCommand.fail("job \(id) is \(state), not \(action == "resume" ? "paused" : "running or paused")")
            return 1
        }
        try await connection.execute("""
            INSERT INTO siwa.audit_log (actor, action, job_id) VALUES (current_user, \("job." + action), \(id))
            """)
        say("job \(id): \(action == "resume" ? "resumed" : "cancelled")")
        return 0
    }
}
