import Postgres
import Testing

@Suite struct WithoutJITTests {
    /// The setting holds inside the transaction only: the connection's own value is back afterwards,
    /// and the statement's rows and errors come through as without it.
    @Test func jitIsOffForTheBodyOnly() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "SET jit = on")
        let inside = try await connection.withoutJIT { try await $0.query("SHOW jit") }.map { try $0.decode("jit", as: String.self) }
        #expect(inside == ["off"])
        let after = try await connection.query("SHOW jit").map { try $0.decode("jit", as: String.self) }
        #expect(after == ["on"])
        await #expect(throws: DatabaseError.self) {
            try await connection.withoutJIT { try await $0.query("SELECT 1 / 0 AS broken") }
        }
        let value = try await connection.query("SELECT 7 AS v").map { try $0.decode("v", as: Int.self) }
        #expect(value == [7], "a failed body leaves no transaction open")
    }
}
