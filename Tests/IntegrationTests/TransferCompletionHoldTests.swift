import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// A transfer job whose canary never finished is held paused, never completed with the rest unplanned.
@Suite(.timeLimit(.minutes(20))) struct TransferCompletionHoldTests {
    @Test func anUnreleasedTransferJobIsHeldPausedWithTheRecovery() async throws {
        let db = try await TestDatabase.create()
        let jobID: Int64 = try await db.scalar("""
            WITH j AS (INSERT INTO siwa.jobs (kind, spec) VALUES ('transfer-export', '{}') RETURNING id),
                 t AS (INSERT INTO siwa.transfer_jobs (job_id, direction, team_id, client_id, peer_team_id, transfer_date,
                                                       canary_size, canary_remaining)
                       SELECT id, 'export', 'TEAMA12345', 'com.example.app', 'TEAMB12345', current_date, 20, 1 FROM j)
            SELECT id FROM j
            """)
        let finished = try await PostgresJobStore(pool: db.pool).completeFinishedJobs()
        #expect(finished.isEmpty)
        let state: String = try await db.scalar("SELECT state FROM siwa.jobs WHERE id = \(jobID)")
        let reason: String = try await db.scalar("SELECT paused_reason FROM siwa.jobs WHERE id = \(jobID)")
        #expect(state == "paused")
        #expect(reason.contains("transfer release --job \(jobID)"))
        await db.drop()
    }
}
