import Foundation
import Postgres

/// A lock on a table held by a separate connection in an open transaction, as an operator's
/// long `ALTER TABLE` or a stuck migration would (`LOCK TABLE ... IN EXCLUSIVE MODE`: reads pass,
/// writes wait).
final class TableLock: @unchecked Sendable {   // used from one test task at a time
    private let connection: PostgresConnection

    private init(connection: PostgresConnection) { self.connection = connection }

    /// Takes the lock on `table` and holds it until `release()`.
    static func hold(_ table: String, on database: TestDatabase) async throws -> TableLock {
        let connection = try await PostgresConnection.connect(database.configuration)
        try await connection.simpleQuery(unsafeSQL: "BEGIN; LOCK TABLE \(table) IN EXCLUSIVE MODE")
        return TableLock(connection: connection)
    }

    func release() async throws {
        try await connection.simpleQuery(unsafeSQL: "COMMIT")
        connection.close()
    }
}

/// Waits (real time, polling) until `condition` holds; throws naming `what` after `deadline`.
func waitFor(_ what: String, deadline: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws {
    let start = ContinuousClock.now
    while try await !condition() {
        if ContinuousClock.now - start > deadline { throw TestFailure("gave up after \(deadline) waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(50))
    }
}

extension String {
    /// How many times `needle` occurs.
    func occurrences(of needle: String) -> Int { components(separatedBy: needle).count - 1 }
}

extension SIWAWorld {
    /// `MATCH` as `siwa-jobs status --sandbox` decides it: the job's valid and invalid counts
    /// equal the sandbox's truth. Returns nil on a match, else what differs.
    func mismatch(job: Int64) async throws -> String? {
        let truth = sandbox.model.truth(teamID: Self.teamID, clientID: Self.clientID)
        let valid: Int = try await database.scalar("SELECT valid::int FROM siwa.job_progress WHERE job_id = \(job)")
        let invalid: Int = try await database.scalar("SELECT invalid::int FROM siwa.job_progress WHERE job_id = \(job)")
        guard valid != truth.valid || invalid != truth.revoked else { return nil }
        return "valid \(valid) (truth \(truth.valid)), invalid \(invalid) (truth \(truth.revoked))"
    }
}
