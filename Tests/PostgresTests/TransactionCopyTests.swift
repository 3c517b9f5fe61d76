import Foundation
import Postgres
import Testing

@Suite struct TransactionCopyTests {
    struct Rollback: Error {}

    @Test func transactionCommitsAndRollsBack() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE tx (v int)")
        let returned = try await connection.transaction { tx in
            try await tx.execute("INSERT INTO tx VALUES (\(1)), (\(2))")
        }
        #expect(returned == 2)
        await #expect(throws: Rollback.self) {
            try await connection.transaction { tx in
                try await tx.execute("INSERT INTO tx VALUES (\(3))")
                throw Rollback()
            }
        }
        let values = try await connection.query("SELECT v FROM tx ORDER BY v").map { try $0.decode("v", as: Int.self) }
        #expect(values == [1, 2])
        // No transaction left open: SAVEPOINT outside a transaction block fails with 25P01.
        do {
            try await connection.simpleQuery(unsafeSQL: "SAVEPOINT probe")
            Issue.record("a transaction is still open")
        } catch {
            #expect(error.sqlState == "25P01")
        }
    }

    @Test func caughtErrorInsideTransactionFailsTheCommit() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE tx2 (v int PRIMARY KEY)")
        do {
            try await connection.transaction { tx in
                try await tx.execute("INSERT INTO tx2 VALUES (\(1))")
                _ = try? await tx.execute("INSERT INTO tx2 VALUES (\(1))")
            }
            Issue.record("expected COMMIT of an aborted transaction to fail")
        } catch let error as DatabaseError {
            #expect(error.sqlState == "25P02")
        }
        #expect(try await connection.query("SELECT count(*) AS n FROM tx2")[0].decode("n", as: Int.self) == 0)
    }

    @Test func copyFromStdinWithCSVChunks() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE imported (id bigint, name text, note text)")
        var csv = ""
        for index in 1...1000 {
            csv += "\(index),\"name, \"\"quoted\"\" \(index)\",\(index % 3 == 0 ? "" : "ünï \\ \(index)")\n"
        }
        let bytes = Array(csv.utf8)
        let chunks = stride(from: 0, to: bytes.count, by: 777).map { Array(bytes[$0..<min($0 + 777, bytes.count)]) }
        let copied = try await connection.copyFrom("COPY imported (id, name, note) FROM STDIN WITH (FORMAT csv)", chunks: chunks)
        #expect(copied == 1000)
        let row = try #require(try await connection.query("SELECT * FROM imported WHERE id = \(Int64(7))").first)
        #expect(try row.decode("name", as: String.self) == "name, \"quoted\" 7")
        #expect(try row.decode("note", as: String.self) == "ünï \\ 7")
        #expect(try await connection.query("SELECT count(*) AS n FROM imported WHERE note IS NULL")[0].decode("n", as: Int.self) == 333)
    }

    @Test func badCopyDataFailsAndLeavesConnectionUsable() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE strict_copy (id bigint NOT NULL)")
        do {
            _ = try await connection.copyFrom("COPY strict_copy FROM STDIN WITH (FORMAT csv)",
                                              chunks: [Array("1\n2\nnot-a-number\n".utf8)])
            Issue.record("expected COPY to fail")
        } catch {
            #expect(error.sqlState == "22P02" && !error.isConnectionLoss)
        }
        await #expect(throws: DatabaseError.self) {
            _ = try await connection.copyFrom("SELECT 1", chunks: [[UInt8]]())
        }
        let copied = try await connection.copyFrom("COPY strict_copy FROM STDIN", chunks: [Array("5\n6\n".utf8)])
        #expect(copied == 2)
        #expect(try await connection.query("SELECT sum(id) AS s FROM strict_copy")[0].decode("s", as: Int.self) == 11)
    }
}
