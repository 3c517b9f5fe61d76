import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Backpressure (issue #8 item 2): while `siwa.results` is locked, the worker stops claiming
/// once the bound (max(2 × C, C + 1024) completions plus items in flight) is reached, and writes
/// them all when the lock goes.
@Suite(.serialized) struct BackpressureTests {
    @Test func withResultsLockedForSixtySecondsAtMostTwoCCompletionsWaitInMemory() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(50))
        try await world.seed(accounts: 4000, revokedFraction: 0.03)
        let job = try await world.enqueue()
        let concurrency = 64, bound = max(2 * concurrency, concurrency + 1024)   // the default --max-unflushed
        let worker = try BinaryProcess(["work", "--drain", "--concurrency", "\(concurrency)"], environment: world.environment)
        try await waitFor("the first 200 results") {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) >= 200
        }
        let lock = try await TableLock.hold("siwa.results", on: world.database)
        // Nothing commits a result while the lock is held, so calls beyond this many are held in memory.
        let written: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results")
        var most = 0
        for _ in 0..<60 {
            try await Task.sleep(for: .seconds(1))
            let calls = world.sandbox.model.stats().requests["/auth/token"] ?? 0
            most = max(most, calls - written)
        }
        try await lock.release()
        let status = await worker.wait()
        #expect(most <= bound, "calls made beyond the results written while locked: \(most) (bound \(bound))")
        #expect(most >= concurrency, "the worker should have made calls it could not write: \(most)")
        #expect(status == 0, "\(worker.stdout) \(worker.stderr.suffix(2000))")
        let peak = worker.stderr.firstMatch(of: /"peak_unflushed":"(\d+)"/).flatMap { Int($0.1) }
        #expect(peak != nil && peak! <= bound, "peak_unflushed \(String(describing: peak))")
        #expect(worker.stdout.contains("succeeded=4000 failed=0 discarded=0 "), "\(worker.stdout)")
        let mismatch = try await world.mismatch(job: job.jobID)
        #expect(mismatch == nil, "MISMATCH: \(mismatch ?? "")")
        #expect(world.sandbox.model.stats().requests["/auth/token"] == 4000, "each item called Apple once")
        await world.tearDown()
    }
}
