import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// `job retry`, `results export`, `jobs list` and `job show` through the binary, against the
/// sandbox and real PostgreSQL (README "Retention and job control").
@Suite(.serialized, .timeLimit(.minutes(10))) struct JobControlTests {
    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
    }

    /// A refresh job of 40 accounts whose first 5 Apple calls answer an HTML page (transient):
    /// with one attempt and no retry budget those 5 items are discarded.
    static func jobWithDiscardedItems(_ world: inout SIWAWorld) async throws -> (job: Int64, discarded: [Int64]) {
        try await world.seed(accounts: 40, revokedFraction: 0.1)
        let enqueue = try await BinaryProcess.run(["enqueue", "refresh-validation", "--max-attempts", "1"], environment: world.environment)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        let job: Int64 = try await world.database.scalar("SELECT max(id) FROM siwa.jobs")
        try await world.admin.scriptFault("html", count: 5)
        let run = try await BinaryProcess.run(["work", "--drain", "--concurrency", "1", "--retry-budget-seconds", "0"],
                                              environment: world.environment)
        #expect(run.status == 1, "item failures (the discarded) exit 1: \(run.stdout) \(run.stderr.suffix(800))")
        let rows = try await world.database.pool.query("""
            SELECT id FROM siwa.job_items WHERE job_id = \(job) AND state = 'discarded' ORDER BY id
            """)
        return (job, try rows.map { try $0.decode("id") })
    }

    @Test func retryMakesExactlyTheDiscardedItemsDueAndKeepsTheOldResultsInHistory() async throws {
        var world = try await SIWAWorld.create()
        let (job, discarded) = try await Self.jobWithDiscardedItems(&world)
        #expect(discarded.count == 5)
        let completed: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job)")
        #expect(completed == "completed")

        let retry = try await BinaryProcess.run(["job", "retry", "\(job)", "--outcome", "discarded", "--json"], environment: world.environment)
        #expect(retry.status == 0, "\(retry.stderr)")
        let answer = try Self.json(retry.stdout)
        #expect(answer["items"] as? Int == 5 && answer["reopened"] as? Bool == true, "\(retry.stdout)")
        let due = try await world.database.pool.query("""
            SELECT id, attempt FROM siwa.job_items WHERE job_id = \(job) AND state = 'available' AND claim_singly ORDER BY id
            """)
        #expect(try due.map { try $0.decode("id", as: Int64.self) } == discarded, "exactly the discarded items are due")
        #expect(try due.allSatisfy { try $0.decode("attempt", as: Int.self) == 0 }, "with fresh attempts")
        let history: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.result_history WHERE job_id = \(job) AND outcome = 'discarded'
            """)
        #expect(history == 5)
        let running: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job)")
        #expect(running == "running")

        let drain = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr.suffix(800))")
        let fresh = try await world.database.pool.query("""
            SELECT r.item_id, r.outcome, h.outcome AS old FROM siwa.results r
            JOIN siwa.result_history h ON h.job_id = r.job_id AND h.item_id = r.item_id
            WHERE r.job_id = \(job) ORDER BY r.item_id
            """)
        #expect(try fresh.map { try $0.decode("item_id", as: Int64.self) } == discarded, "each has a new result beside the old")
        #expect(try fresh.allSatisfy { ["valid", "invalid"].contains(try $0.decode("outcome", as: String.self)) })
        #expect(try fresh.allSatisfy { try $0.decode("old", as: String.self) == "discarded" })
        let state: String = try await world.database.scalar("SELECT state FROM siwa.jobs WHERE id = \(job)")
        #expect(state == "completed")
        // Nothing left to retry: a second retry changes nothing.
        let again = try await BinaryProcess.run(["job", "retry", "\(job)", "--outcome", "discarded"], environment: world.environment)
        #expect(again.status == 0 && again.stdout.contains("0 items due again"), "\(again.stdout)")
        await world.tearDown()
    }

    @Test func exportStreamsPagesWithFingerprintsOnlyAndListShowSeeTheJob() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 40, revokedFraction: 0.1)
        let job = try await world.enqueue()
        let drain = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(drain.status == 0, "\(drain.stderr.suffix(800))")
        let file = world.directory.appendingPathComponent("results.jsonl").path
        let jsonl = try await BinaryProcess.run(["results", "export", "--job", "\(job.jobID)", "--format", "jsonl", "--out", file,
                                                 "--page-size", "7"], environment: world.environment)
        #expect(jsonl.status == 0, "\(jsonl.stderr)")
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 40, "6 pages of 7 read, every row once")
        let objects = try lines.map(Self.json)
        let ids = objects.compactMap { $0["item_id"] as? Int }
        #expect(ids == ids.sorted() && Set(ids).count == 40)
        #expect(objects.allSatisfy { ($0["token_fingerprint"] as? String)?.hasPrefix("hmac:") == true })
        let csv = try await BinaryProcess.run(["results", "export", "--job", "\(job.jobID)", "--format", "csv", "--outcome", "invalid"],
                                              environment: world.environment)
        let rows = csv.stdout.split(separator: "\n")
        #expect(rows.first == "item_id,account_id,external_user_id,outcome,http_status,apple_error,token_fingerprint,attempt,created_at,detail")
        #expect(rows.count == 1 + 4 && rows.dropFirst().allSatisfy { $0.contains(",invalid,") && $0.contains("invalid_grant") }, "\(csv.stdout)")
        let tokens = try #require(world.seeded).tokens.map(\.token)
        let haystack = lines.joined(separator: "\n") + csv.stdout + csv.stderr + jsonl.stderr
        #expect(!tokens.contains { haystack.contains($0) }, "a refresh token leaked into the export")

        let list = try await BinaryProcess.run(["jobs", "list", "--state", "completed", "--kind", "refresh-validation", "--since", "1h",
                                                "--json"], environment: world.environment)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]], "\(list.stderr)")
        #expect(listed.count == 1 && listed.first?["id"] as? Int == Int(job.jobID) && listed.first?["done"] as? Int == 40)
        let none = try await BinaryProcess.run(["jobs", "list", "--state", "running"], environment: world.environment)
        #expect(none.stdout.hasPrefix("no jobs"), "\(none.stdout)")
        let show = try Self.json(try await BinaryProcess.run(["job", "show", "\(job.jobID)", "--json"], environment: world.environment).stdout)
        #expect((show["item_states"] as? [String: Any])?["succeeded"] as? Int == 40)
        #expect((show["outcomes"] as? [String: Any])?["invalid"] as? Int == 4)
        let top = try #require(show["top_apple_errors"] as? [[String: Any]])
        #expect(top.first?["code"] as? String == "invalid_grant" && top.first?["items"] as? Int == 4, "\(show)")
        #expect(show["remaining"] as? Int == 0 && show["from_summary"] as? Bool == false)
        await world.tearDown()
    }
}
