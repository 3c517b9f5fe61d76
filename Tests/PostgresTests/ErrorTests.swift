import Foundation
import Postgres
import Testing

@Suite struct ErrorTests {
    @Test func uniqueViolationCarriesSQLStateAndConnectionStaysUsable() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE u (email text UNIQUE)")
        try await connection.execute("INSERT INTO u VALUES (\("secret@example.com"))")
        do {
            try await connection.execute("INSERT INTO u VALUES (\("secret@example.com"))")
            Issue.record("expected a unique violation")
        } catch {
            #expect(error.kind == .query)
            #expect(error.sqlState == "23505")
            #expect(error.isUniqueViolation && !error.isConnectionLoss)
            #expect(!error.description.contains("secret@example.com"))
            #expect(!error.description.contains("INSERT"))
        }
        let rows = try await connection.query("SELECT count(*) AS n FROM u")
        #expect(try rows[0].decode("n", as: Int.self) == 1)
    }

    @Test func syntaxErrorCarries42601() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        do {
            try await connection.query("SELEC \(1)")
            Issue.record("expected a syntax error")
        } catch {
            #expect(error.kind == .query && error.sqlState == "42601")
            #expect(error.description.contains("42601"))
        }
        do {
            try await connection.simpleQuery(unsafeSQL: "SELECT 1; SELEC 2")
            Issue.record("expected a syntax error")
        } catch {
            #expect(error.sqlState == "42601")
        }
        #expect(try await connection.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
        #expect(!connection.isBroken)
    }

    @Test func dataExceptionDescriptionDoesNotEchoTheValue() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        do {
            try await connection.query("SELECT \("tok_supersecret")::int")
            Issue.record("expected invalid input syntax")
        } catch {
            #expect(error.sqlState == "22P02")
            #expect(error.message.contains("tok_supersecret"))
            #expect(!error.description.contains("tok_supersecret"))
        }
    }

    @Test func nulDecodesIntoNonOptionalNameTheColumn() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        let row = try #require(try await connection.query("SELECT NULL::int AS maybe_count, 'abc' AS word").first)
        do {
            _ = try row.decode("maybe_count", as: Int.self)
            Issue.record("expected a decoding error")
        } catch {
            #expect(error.kind == .decoding)
            #expect(error.message.contains("maybe_count"))
        }
        do {
            _ = try row.decode("word", as: Int.self)
            Issue.record("expected a decoding error")
        } catch {
            #expect(error.message.contains("word") && !error.message.contains("abc"))
        }
        #expect(throws: DatabaseError.self) { try row.decode("no_such_column", as: String?.self) }
    }

    @Test(arguments: [
        "host=127.0.0.1 port=1 user=nobody dbname=nothing password=hunter2-secret-pw",
        "postgres://nobody:hunter2-secret-pw@127.0.0.1:1/nothing",
    ])
    func connectionRefusedIsAConnectionErrorWithoutPassword(conninfo: String) async throws {
        let configuration = PostgresConfiguration(conninfo: conninfo, connectTimeoutSeconds: 3)
        #expect(!configuration.redactedDescription.contains("hunter2"))
        #expect(configuration.redactedDescription.contains("password=<redacted>"))
        do {
            _ = try await PostgresConnection.connect(configuration)
            Issue.record("expected the connection to fail")
        } catch {
            #expect(error.kind == .connection && error.isConnectionLoss)
            #expect(!error.message.isEmpty)
            #expect(!error.description.contains("hunter2"))
            #expect(!error.message.contains("hunter2"))
        }
    }

    @Test func configurationFromEnvironment() {
        #expect(PostgresConfiguration.fromEnvironment([:]).conninfo == "")
        let configuration = PostgresConfiguration.fromEnvironment(["DATABASE_URL": "postgresql://u:pw@db/app"])
        #expect(configuration.conninfo == "postgresql://u:pw@db/app")
        #expect(configuration.connectTimeoutSeconds == 10 && configuration.applicationName == "siwa-jobs")
        #expect(!configuration.redactedDescription.contains("pw@") && configuration.redactedDescription.contains("host=db"))
        #expect(!PostgresConfiguration(conninfo: "password='a b' host=x").redactedDescription.contains("a b"))
    }

    @Test func nulByteInABindIsRejected() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        await #expect(throws: DatabaseError.self) { try await connection.query("SELECT \("a\u{0}b")") }
        #expect(try await connection.query("SELECT 2 AS two")[0].decode("two", as: Int.self) == 2)
    }

    @Test func closedConnectionFailsWithAConnectionError() async throws {
        let connection = try await TestDatabase.connect()
        #expect(!connection.isBroken)
        connection.close()
        connection.close()
        #expect(connection.isBroken)
        do {
            try await connection.query("SELECT 1")
            Issue.record("expected a connection error")
        } catch {
            #expect(error.kind == .connection && error.isConnectionLoss)
        }
    }
}
