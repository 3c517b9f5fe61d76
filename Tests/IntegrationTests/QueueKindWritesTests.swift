import Clocks
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// The queue's completion statement writes a kind's own result columns and runs its typed effect,
/// atomically with the items' completion and only for items the worker still leases.
@Suite(.timeLimit(.minutes(20))) struct QueueKindWritesTests {
    struct Note: Encodable {
        let note: String
    }

    @Test func kindColumnsAndEffectStepsLandWithTheCompletion() async throws {
        let db = try await TestDatabase.create()
        _ = try await Enqueuer(pool: db.pool, clock: SystemClock()).enqueueNoop(items: 3, createdBy: "test")
        try await db.pool.execute("CREATE TABLE siwa.test_notes (item_id bigint, note text, state text)")
        try await db.pool.execute("CREATE TABLE siwa.test_note_counts (n bigint)")
        let writes = KindWrites(resultColumns: [ResultColumn("apple_error")], effect: CompletionEffect([
            .init("noted", unsafeSQL: """
                INSERT INTO siwa.test_notes (item_id, note, state)
                SELECT item_id, effect->>'note', state FROM done WHERE effect ? 'note' RETURNING item_id
                """),
            .init("counted", unsafeSQL: "INSERT INTO siwa.test_note_counts (n) SELECT count(*) FROM noted"),
        ]))
        let store = PostgresJobStore(pool: db.pool)
        let claimed = try await store.claim(owner: "w", kinds: ["noop"], limit: 10, lease: .seconds(30)).sorted { $0.id < $1.id }
        #expect(claimed.count == 3)
        let stale = ClaimedItem(id: claimed[2].id, jobID: claimed[2].jobID, accountID: nil, payload: nil,
                                attempt: claimed[2].attempt + 1, maxAttempts: claimed[2].maxAttempts)
        let completions = [
            Completion(item: claimed[0], kind: "noop", state: .succeeded,
                       result: ResultRecord(outcome: NoopHandler.Outcome.ok, kindValues: [ResultColumn("apple_error"): "x"]),
                       effect: EffectPayload(Note(note: "first"))),
            Completion(item: claimed[1], kind: "noop", state: .failed, lastError: "nope",
                       result: ResultRecord(outcome: ResultOutcome.failed)),
            // An attempt this worker no longer holds: nothing of it is written, its effect neither.
            Completion(item: stale, kind: "noop", state: .succeeded, result: ResultRecord(outcome: NoopHandler.Outcome.ok),
                       effect: EffectPayload(Note(note: "stale"))),
        ]
        #expect(try await store.complete(completions, owner: "w", writes: writes).count == 2)
        let rows = try await db.pool.query("""
            SELECT item_id, outcome, apple_error, token_fingerprint FROM siwa.results ORDER BY item_id
            """)
        #expect(rows.count == 2)
        #expect(try rows[0].decode("outcome", as: String.self) == "ok")
        #expect(try rows[0].decode("apple_error", as: String?.self) == "x")
        #expect(try rows[0].decode("token_fingerprint", as: String?.self) == nil)
        #expect(try rows[1].decode("outcome", as: String.self) == "failed")
        #expect(try rows[1].decode("apple_error", as: String?.self) == nil)
        let notes = try await db.pool.query("SELECT item_id, note, state FROM siwa.test_notes")
        #expect(notes.count == 1)
        #expect(try notes.first?.decode("item_id", as: Int64.self) == claimed[0].id)
        #expect(try notes.first?.decode("note", as: String.self) == "first")
        #expect(try notes.first?.decode("state", as: String.self) == "succeeded")
        let counted: Int64 = try await db.scalar("SELECT n FROM siwa.test_note_counts")
        #expect(counted == 1)
        let lastError: String = try await db.scalar("SELECT last_error FROM siwa.job_items WHERE id = \(claimed[1].id)")
        #expect(lastError == "nope")
        await db.drop()
    }

    @Test func everyKindsEffectStepsHaveUniqueNamesTheQueueDoesNotUse() {
        let effects = [RefreshValidationHandler.effect, RevocationSweepHandler.effect, TransferExportHandler.effect,
                       TransferImportHandler.effect, NotificationProcessingHandler.effect]
        for effect in effects {
            let names = effect.steps.map(\.name)
            #expect(Set(names).count == names.count)
            #expect(Set(names).isDisjoint(with: CompletionEffect.reservedNames))
            #expect(names.allSatisfy { $0 == $0.lowercased() })   // later steps read them unquoted
        }
        #expect(TransferImportHandler.effect.steps.map(\.name)
                == ["applied_effects", "transfer_rows", "transfer_canary", "transfer_release", "transfer_released",
                    "transfer_release_audit"])
    }

    @Test func handlersDeclareTheirOwnColumnsAndTheQueueNamesNone() throws {
        let noop = NoopHandler()
        #expect(noop.writes.resultColumns.isEmpty && noop.writes.effect == nil)
        let appleColumns = KindWrites.appleCalls(effect: nil).resultColumns.map(\.name)
        #expect(appleColumns == ["apple_error", "token_fingerprint"])
        // The queue's sources never name a kind's columns.
        let queue = repositoryRoot.appendingPathComponent("Sources/Queue")
        let queueFiles = try FileManager.default.contentsOfDirectory(atPath: queue.path).filter { $0.hasSuffix(".swift") }
        #expect(queueFiles.count > 10, "the scan needs the queue's sources: \(queueFiles)")
        for file in queueFiles {
            let text = try String(contentsOf: queue.appendingPathComponent(file), encoding: .utf8)
            if file == "QueueSchema.swift" { continue }   // documents 0001_core.sql's history
            #expect(!text.contains("apple_error") && !text.contains("token_fingerprint") && !text.contains("appleError"),
                    "\(file) names a kind-owned column")
        }
    }
}
