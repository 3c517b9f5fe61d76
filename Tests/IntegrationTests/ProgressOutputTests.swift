import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// `work --progress` and `status --watch` print JSON lines when stdout is not a terminal (here a
/// pipe), one per job per sample, and never a first sample of "0 items/s".
@Suite(.serialized, .timeLimit(.minutes(5))) struct ProgressOutputTests {
    static func samples(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    @Test func workProgressPrintsJSONLinesWhoseFirstSampleHasNoMadeUpRate() async throws {
        let db = try await TestDatabase.create()
        let job = try await RetentionTests.enqueueNoop(db, items: 3_000)
        let run = try await BinaryProcess.run(["work", "--drain", "--progress", "--kinds", "noop"], environment: db.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(800))")
        let samples = Self.samples(run.stdout)
        let first = try #require(samples.first, "no JSON line in: \(run.stdout)")
        #expect(first["job_id"] as? Int == Int(job) && first["items"] as? Int == 3_000 && first["kind"] as? String == "noop")
        #expect(first["rate"] is NSNull, "the first sample of a fresh job has no rate yet: \(first)")
        // A rate of 0 is true only while nothing is done yet (a slow start on a loaded machine).
        #expect(samples.allSatisfy { sample in
            let done = sample["done"] as? Int
            guard let rate = sample["rate"] as? Double else { return sample["rate"] is NSNull }
            return rate > 0 || done == 0 || done == 3_000
        }, "\(run.stdout)")
        await db.drop()
    }

    @Test func statusWatchOnAHalfDoneJobStartsWithItsRealRate() async throws {
        let db = try await TestDatabase.create()
        let job = try await RetentionTests.enqueueNoop(db, items: 200)
        try await db.pool.execute("""
            UPDATE siwa.job_items SET state = 'succeeded', finished_at = now()
            WHERE id IN (SELECT id FROM siwa.job_items WHERE job_id = \(job) ORDER BY id LIMIT 100)
            """)
        try await db.pool.execute("UPDATE siwa.jobs SET created_at = now() - interval '100 seconds' WHERE id = \(job)")
        let watch = try BinaryProcess(["status", "--watch", "--job", "\(job)"], environment: db.environment)
        try await Eventually.wait("the first status --watch sample", while: watch) { !Self.samples(watch.stdout).isEmpty }
        watch.signal(SIGTERM)
        _ = await watch.wait(timeout: .seconds(30))
        let first = try #require(Self.samples(watch.stdout).first)
        #expect(first["percent"] as? Double == 50 && first["done"] as? Int == 100)
        let rate = try #require(first["rate"] as? Double, "\(first)")
        #expect(rate > 0.5 && rate <= 1.0, "about 100 items in 100 s: \(first)")
        #expect(first["eta_s"] as? Double != nil)
        await db.drop()
    }
}
