import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// `siwa-jobs prune` through the binary on real PostgreSQL (README "Retention and job control"):
/// finished jobs' partitions go whole after the period, summaries stay, the audit log keeps its own
/// period, running and paused jobs are never touched, and `--dry-run` changes nothing.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RetentionTests {
    /// A no-op job of `items` items, planned by the binary.
    static func enqueueNoop(_ db: TestDatabase, items: Int) async throws -> Int64 {
        let run = try await BinaryProcess.run(["enqueue", "noop", "--items", "\(items)"], environment: db.environment)
        #expect(run.status == 0, "\(run.stderr)")
        let words = run.stdout.split { $0 == " " || $0 == "\n" || $0 == ":" }
        let index = try #require(words.firstIndex(of: "job"), "\(run.stdout)")
        return try #require(Int64(words[words.index(after: index)]), "\(run.stdout)")
    }

    /// `work --drain --kinds noop`; `status` 78 when a paused job is left (it needs a person).
    static func drainNoop(_ db: TestDatabase, status: Int32 = 0) async throws {
        let run = try await BinaryProcess.run(["work", "--drain", "--kinds", "noop"], environment: db.environment)
        #expect(run.status == status, "\(run.stdout) \(run.stderr.suffix(800))")
    }

    static func count(_ db: TestDatabase, _ table: String, job: Int64) async throws -> Int {
        try await db.scalar(SQL(unsafeSQL: "SELECT count(*)::int FROM siwa.\(table) WHERE job_id = \(job)"))
    }

    /// Everything prune may change, as one comparable value.
    static func snapshot(_ db: TestDatabase) async throws -> String {
        try await db.scalar("""
            SELECT concat_ws(' ', (SELECT count(*) FROM siwa.job_items), (SELECT count(*) FROM siwa.results),
                             (SELECT count(*) FROM siwa.audit_log), (SELECT count(*) FROM siwa.item_partitions),
                             (SELECT count(*) FROM siwa.job_summaries WHERE pruned_at IS NOT NULL),
                             (SELECT count(*) FROM siwa.notifications WHERE payload IS NULL),
                             (SELECT string_agg(id || ':' || state, ',' ORDER BY id) FROM siwa.jobs))
            """)
    }

    @Test func pruneDropsOldFinishedJobsKeepsSummariesAuditAndActiveJobs() async throws {
        let db = try await TestDatabase.create()
        // A: finished 40 days ago (prunable). B: paused, C: running, D: finished 2 days ago; all planned after A.
        let a = try await Self.enqueueNoop(db, items: 20)
        try await Self.drainNoop(db)
        let b = try await Self.enqueueNoop(db, items: 10)
        let pause = try await BinaryProcess.run(["job", "pause", "\(b)"], environment: db.environment)
        #expect(pause.status == 0 && pause.stdout.contains("job \(b): paused"), "\(pause.stdout) \(pause.stderr)")
        let d = try await Self.enqueueNoop(db, items: 5)
        try await Self.drainNoop(db, status: 78)
        let c = try await Self.enqueueNoop(db, items: 10)
        try await db.pool.execute("""
            UPDATE siwa.jobs SET created_at = now() - interval '41 days',
                                 finished_at = CASE WHEN state = 'completed' THEN now() - interval '40 days' END
            WHERE id IN (\(a), \(b), \(c))
            """)
        try await db.pool.execute("UPDATE siwa.jobs SET finished_at = now() - interval '2 days' WHERE id = \(d)")
        try await db.pool.execute("""
            INSERT INTO siwa.audit_log (at, actor, action) VALUES (now() - interval '401 days', 'test', 'old'),
                                                                  (now() - interval '399 days', 'test', 'kept')
            """)
        try await db.pool.execute("""
            INSERT INTO siwa.notifications (payload, payload_sha256, verification, processed_at)
            SELECT p, sha256(convert_to(p, 'UTF8')), 'verified', now() - make_interval(days => d)
            FROM (VALUES ('eyJold.payload.sig', 8), ('eyJnew.payload.sig', 6)) v(p, d)
            """)
        // Summaries are prune's: none when A completed. A stale one, as an earlier prune would
        // have left before A was retried, is written again when A's partition goes.
        let atCompletion: Int = try await db.scalar("SELECT count(*)::int FROM siwa.job_summaries")
        #expect(atCompletion == 0, "no summary is written when a job completes")
        try await db.pool.execute("""
            INSERT INTO siwa.job_summaries (job_id, kind, state, priority, created_at, items, outcomes)
            SELECT id, kind, state, priority, created_at, 3, '{"ok": 3}' FROM siwa.jobs WHERE id = \(a)
            """)

        let before = try await Self.snapshot(db)
        let dry = try await BinaryProcess.run(["prune", "--dry-run", "--json"], environment: db.environment)
        #expect(dry.status == 0, "\(dry.stderr)")
        let dryReport = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any])
        let wouldDrop = (dryReport["dropped"] as? [[String: Any]] ?? []).compactMap { $0["partition"] as? String }
        #expect(wouldDrop.contains("j\(a)"), "\(dry.stdout)")
        #expect(dryReport["audit_rows_deleted"] as? Int == 1 && dryReport["payloads_dropped"] as? Int == 1, "\(dry.stdout)")
        #expect(try await Self.snapshot(db) == before, "--dry-run changed nothing")

        let run = try await BinaryProcess.run(["prune", "--json"], environment: db.environment)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let dropped = (report["dropped"] as? [[String: Any]] ?? [])
        #expect(dropped.contains { $0["partition"] as? String == "j\(a)" && $0["jobs"] as? Int == 1 && $0["items"] as? Int == 20 },
                "\(run.stdout)")
        let aItems = try await Self.count(db, "job_items", job: a), aResults = try await Self.count(db, "results", job: a)
        #expect(aItems == 0 && aResults == 0)
        let aGone: Bool = try await db.scalar("SELECT to_regclass('siwa.job_items_j' || \(a)) IS NULL")
        #expect(aGone, "the partition was dropped, not emptied")
        // Untouched: the paused, the running and the recent job, with their states.
        let bItems = try await Self.count(db, "job_items", job: b), cItems = try await Self.count(db, "job_items", job: c)
        #expect(bItems == 10 && cItems == 10)
        #expect(try await Self.count(db, "results", job: d) == 5)
        let states: String = try await db.scalar("SELECT string_agg(state, ',' ORDER BY id) FROM siwa.jobs WHERE id IN (\(b), \(c), \(d))")
        #expect(states == "paused,completed,running", "b, d, c by id")
        // The summary stays, marked pruned; job show reads it.
        let pruned: Bool = try await db.scalar("SELECT pruned_at IS NOT NULL FROM siwa.job_summaries WHERE job_id = \(a)")
        #expect(pruned)
        let summaryA: String = try await db.scalar("SELECT outcomes::text || ' ' || items FROM siwa.job_summaries WHERE job_id = \(a)")
        #expect(summaryA == #"{"ok": 20} 20"#, "written again just before the partition went")
        let summarized: String = try await db.scalar("SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM siwa.job_summaries")
        #expect(summarized == "\(a),\(d)", "prune summarized the finished jobs, not the paused or running ones")
        let show = try await BinaryProcess.run(["job", "show", "\(a)", "--json"], environment: db.environment)
        let detail = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any], "\(show.stderr)")
        #expect(detail["from_summary"] as? Bool == true && (detail["outcomes"] as? [String: Any])?["ok"] as? Int == 20, "\(show.stdout)")
        // The audit log: older than 400 days gone, 399 days kept, and the prune itself recorded.
        let audit: String = try await db.scalar("""
            SELECT string_agg(action, ',' ORDER BY action) FROM siwa.audit_log WHERE action IN ('old', 'kept', 'retention.pruned')
            """)
        #expect(audit.hasPrefix("kept,retention.pruned"), "\(audit)")
        let payloads: String = try await db.scalar("""
            SELECT string_agg(coalesce(payload, 'NULL'), ',' ORDER BY id) FROM siwa.notifications
            """)
        #expect(payloads == "NULL,eyJnew.payload.sig")
        // The queue still runs beside the dropped partition: C drains, B stays paused.
        try await Self.drainNoop(db, status: 78)
        let cResults = try await Self.count(db, "results", job: c), bResults = try await Self.count(db, "results", job: b)
        #expect(cResults == 10 && bResults == 0)
        // Nothing more to drop: a second prune drops nothing with jobs.
        let again = try await BinaryProcess.run(["prune", "--json"], environment: db.environment)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect((second["dropped"] as? [[String: Any]] ?? []).allSatisfy { $0["jobs"] as? Int == 0 }, "\(again.stdout)")
        await db.drop()
    }
}
