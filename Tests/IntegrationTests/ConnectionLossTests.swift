import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Dropped database connections mid-run: the worker reconnects and nothing it held is lost.
@Suite(.serialized, .timeLimit(.minutes(30))) struct ConnectionLossTests {
    @Test func workerRidesOutTerminatedBackends() async throws {
        var world = try await SIWAWorld.create(latency: .fixed(20))
        try await world.seed(accounts: 2000, revokedFraction: 0.05)
        let job = try await world.enqueue()
        let worker = try BinaryProcess(["work", "--drain", "--concurrency", "32"], environment: world.environment)
        // Once the run is under way, a separate connection terminates the worker's backends
        // (application_name 'siwa-jobs'; the test's own connections are 'siwa-tests'), several times.
        try await Eventually.wait("50 results written", while: worker) {
            try await world.database.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) >= 50
        }
        let killer = try await PostgresConnection.connect(world.database.configuration)
        var terminated = 0
        for _ in 0..<6 where worker.process.isRunning {
            try await Task.sleep(for: .milliseconds(300))
            let rows = try await killer.query("""
                SELECT count(*)::int AS n FROM (
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                      AND application_name = 'siwa-jobs'
                ) t
                """)
            terminated += try rows.first?.decode("n", as: Int.self) ?? 0
        }
        killer.close()
        let status = await worker.wait()
        #expect(terminated >= 2, "the test should have cut the worker's connections more than once: \(terminated)")
        #expect(status == 0, "\(worker.stderr.suffix(2000))")
        let truth = world.sandbox.model.truth(teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID)
        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("SELECT valid, invalid, terminal, items FROM siwa.job_progress WHERE job_id = \(job.jobID)")
        }
        let row = try #require(rows.first)
        #expect(try row.decode("terminal", as: Int.self) == 2000)
        #expect(try row.decode("valid", as: Int.self) == truth.valid)
        #expect(try row.decode("invalid", as: Int.self) == truth.revoked)
        let results: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID)")
        #expect(results == 2000)
        await world.tearDown()
    }
}
