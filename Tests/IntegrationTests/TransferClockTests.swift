import Clocks
import Foundation
import Postgres
import Testing
import TestSupport
@testable import SIWAJobs

/// The transfer planners and the hand-off loader judge the 60-day window on the clock they were
/// given, not on the machine's: on a manual clock set to 2025-06-01 a transfer of that day is
/// open (on the real date it closed long ago), and moving the clock on closes it.
@Suite(.timeLimit(.minutes(20))) struct TransferClockTests {
    /// 2025-06-01T12:00:00Z.
    static let transferDay = Date(timeIntervalSince1970: 1_748_779_200)
    static let sender = "AAAAA11111", recipient = "BBBBB22222", client = "com.example.app"

    static func refusal(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func theEnqueuerChecksTheWindowOnItsClock() async throws {
        let db = try await TestDatabase.create()
        let clock = ManualClock(start: Self.transferDay)
        let enqueuer = Enqueuer(pool: db.pool, clock: clock)
        // One (deleted) account: the team and client are known, and nothing is due to export.
        try await db.pool.execute("""
            INSERT INTO siwa.accounts (external_user_id, team_id, client_id, sub, deleted_at)
            VALUES ('u1', \(Self.sender), \(Self.client), '001.a.1', now())
            """)
        func export(target: String, day: String) async throws -> EnqueuedJob {
            try await enqueuer.enqueueTransferExport(teamID: Self.sender, clientID: Self.client, target: target,
                                                     transferDate: day, canary: 0, createdBy: "test")
        }
        let job = try await export(target: Self.recipient, day: "2025-06-01")
        #expect(job.items == 0, "open on the manual clock: a job with nothing to export")
        let early = try await export(target: "CCCCC33333", day: "2025-07-31")
        #expect(early.items == 0, "60 days ahead of the manual clock is allowed")
        let tooFar = await Self.refusal { _ = try await export(target: "DDDDD44444", day: "2025-08-01") }
        #expect(tooFar?.hasPrefix("transfer_date 2025-08-01 is 61 days in the future: an export accepts at most 60 days") == true)

        clock.advance(by: .seconds(61 * 86_400))   // 2025-08-01: the window of 2025-06-01 closed the day before
        let closed = await Self.refusal { _ = try await export(target: "EEEEE55555", day: "2025-06-01") }
        #expect(closed?.contains("closed on 2025-07-31 (1 days ago)") == true)
        let jobs: Int = try await db.scalar("SELECT count(*)::int FROM siwa.jobs")
        #expect(jobs == 2, "the export of 2025-06-01 and the one 60 days ahead; the refused ones wrote nothing")
        await db.drop()
    }

    @Test func theLoaderChecksTheWindowOnItsClock() async throws {
        let db = try await TestDatabase.create()
        let clock = ManualClock(start: Self.transferDay)
        let loader = TransferCSVLoader(pool: db.pool, clock: clock)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-clock-\(UUID().uuidString).csv").path
        try Data("external_user_id,transfer_sub\nu1,001.a.1\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        func load(_ day: String) async throws -> TransferImportReport {
            try await loader.load(path: path, teamID: Self.recipient, clientID: Self.client, sourceTeamID: Self.sender,
                                  transferDate: day, createdBy: "test")
        }
        let loaded = try await load("2025-06-01")
        #expect(loaded.importID != nil && loaded.rows == 1, "open on the manual clock")
        let ahead = await Self.refusal { _ = try await load("2025-06-03") }
        #expect(ahead?.hasPrefix("transfer_date 2025-06-03 is 2 days in the future: an import accepts at most 1 day ahead") == true)
        let closed = await Self.refusal { _ = try await load("2025-04-01") }
        #expect(closed?.contains("closed on 2025-05-31 (1 days ago)") == true)
        let imports: Int = try await db.scalar("SELECT count(*)::int FROM siwa.transfer_imports")
        #expect(imports == 1)
        await db.drop()
    }
}
