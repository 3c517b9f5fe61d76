import Foundation
import Postgres
import Testing

/// Statements marked `reusingPlan()`: prepared once per direct connection and run by name; run
/// unnamed through PgBouncer in transaction mode (where a name prepared on one server connection
/// is missing on the next), and again unnamed, once, when a migration changed what a prepared
/// statement returns.
@Suite struct PreparedStatementTests {
    static func preparedCount(_ connection: PostgresConnection, text: String) async throws -> Int {
        let rows = try await connection.query(
            "SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = \(text)")
        return try rows[0].decode("n")
    }

    @Test func aMarkedStatementIsPreparedOnceAndRunsWithEachCallsValues() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        for value in 1...8 {
            let sql: SQL = "SELECT \(value)::int * 2 AS doubled, \(String(repeating: "x", count: value)) AS text"
            let row = try #require(try await connection.query(sql.reusingPlan()).first)
            #expect(try row.decode("doubled", as: Int.self) == value * 2)
            #expect(try row.decode("text", as: String.self).count == value)
        }
        let text = ("SELECT \(1)::int * 2 AS doubled, \("x") AS text" as SQL).text
        #expect(try await Self.preparedCount(connection, text: text) == 1, "one server-side statement for eight calls")
        let unmarked: SQL = "SELECT \(3)::int + 1 AS n"
        _ = try await connection.query(unmarked)
        #expect(try await Self.preparedCount(connection, text: unmarked.text) == 0, "unmarked statements stay unnamed")
    }

    @Test func aTableChangedUnderAPreparedStatementStillAnswers() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        let table = TestDatabase.uniqueName("prepared")
        try await connection.simpleQuery(unsafeSQL: "CREATE TABLE \(table) (id int); INSERT INTO \(table) VALUES (1)")
        defer { Task { try? await connection.simpleQuery(unsafeSQL: "DROP TABLE IF EXISTS \(table)") } }
        let sql = SQL(unsafeSQL: "SELECT * FROM \(table) WHERE id >= ") + "\(0)"
        #expect(try await connection.query(sql.reusingPlan()).count == 1)
        try await connection.simpleQuery(unsafeSQL: "ALTER TABLE \(table) ADD COLUMN note text DEFAULT 'added'")
        let rows = try await connection.query(sql.reusingPlan())
        #expect(try rows[0].decode("note", as: String.self) == "added", "rerun unnamed after 'cached plan must not change result type'")
        #expect(try await connection.query(sql.reusingPlan()).count == 1, "and prepared again afterwards")
    }

    @Test func throughPgBouncerInTransactionModeNothingIsPrepared() async throws {
        let connection = try await PostgresConnection.connect(try ListenerPoolerTests.throughPgBouncer())
        defer { connection.close() }
        for value in 1...6 {
            let sql: SQL = "SELECT \(value)::int AS v, count(*)::int AS prepared FROM pg_prepared_statements"
            let row = try #require(try await connection.query(sql.reusingPlan()).first)
            #expect(try row.decode("v", as: Int.self) == value)
            #expect(try row.decode("prepared", as: Int.self) == 0, "the server connection holds no statement of ours")
        }
    }
}
