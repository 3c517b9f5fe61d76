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

/// The SQLSTATE-class properties of `DatabaseError`: each code maps to exactly the properties
/// listed (table-driven), and real server errors land in the right class.
@Suite struct SQLStateClassTests {
    static var properties: [(name: String, test: @Sendable (DatabaseError) -> Bool)] {
        [
            ("connectionLoss", \.isConnectionLoss), ("invalidCredentials", \.isInvalidCredentials),
            ("unknownDatabase", \.isUnknownDatabase), ("undefinedTable", \.isUndefinedTable),
            ("undefinedSchema", \.isUndefinedSchema), ("insufficientPrivilege", \.isInsufficientPrivilege),
            ("queryCanceled", \.isQueryCanceled), ("lockNotAvailable", \.isLockNotAvailable),
            ("serializationFailure", \.isSerializationFailure), ("deadlock", \.isDeadlock),
            ("transactionRetryable", \.isTransactionRetryable), ("readOnlyTransaction", \.isReadOnlyTransaction),
            ("integrityConstraint", \.isIntegrityConstraintViolation), ("uniqueViolation", \.isUniqueViolation),
            ("foreignKeyViolation", \.isForeignKeyViolation), ("notNullViolation", \.isNotNullViolation),
            ("checkViolation", \.isCheckViolation), ("dataException", \.isDataException),
            ("insufficientResources", \.isInsufficientResources), ("syntaxError", \.isSyntaxError),
        ]
    }

    @Test(arguments: [
        ("08006", ["connectionLoss"]), ("08001", ["connectionLoss"]), ("57P01", ["connectionLoss"]),
        ("57P03", ["connectionLoss"]),
        ("28000", ["invalidCredentials"]), ("28P01", ["invalidCredentials"]),
        ("3D000", ["unknownDatabase"]), ("42P01", ["undefinedTable"]), ("3F000", ["undefinedSchema"]),
        ("42501", ["insufficientPrivilege"]), ("57014", ["queryCanceled"]), ("55P03", ["lockNotAvailable"]),
        ("40001", ["serializationFailure", "transactionRetryable"]), ("40P01", ["deadlock", "transactionRetryable"]),
        ("25006", ["readOnlyTransaction"]),
        ("23505", ["integrityConstraint", "uniqueViolation"]), ("23503", ["integrityConstraint", "foreignKeyViolation"]),
        ("23502", ["integrityConstraint", "notNullViolation"]), ("23514", ["integrityConstraint", "checkViolation"]),
        ("23P01", ["integrityConstraint"]),
        ("22P02", ["dataException"]), ("22012", ["dataException"]), ("22001", ["dataException"]),
        ("53300", ["insufficientResources"]), ("53100", ["insufficientResources"]),
        ("42601", ["syntaxError"]), ("25P02", []), ("42703", []), ("XX000", []),
    ])
    func eachCodeHasExactlyItsClasses(_ sqlState: String, _ expected: [String]) {
        let error = DatabaseError(kind: .query, sqlState: sqlState, message: "m")
        #expect(error.sqlStateClass == String(sqlState.prefix(2)))
        for property in Self.properties {
            #expect(property.test(error) == expected.contains(property.name), "\(sqlState) \(property.name)")
        }
    }

    @Test func noSQLStateMeansNoClassExceptConnectionLoss() {
        let query = DatabaseError(kind: .query, message: "m")
        #expect(query.sqlStateClass == nil)
        #expect(Self.properties.allSatisfy { !$0.test(query) })
        let connection = DatabaseError(kind: .connection, message: "m")
        let lost = DatabaseError(kind: .query, sqlState: "42601", message: "m", connectionWasLost: true)
        #expect(connection.isConnectionLoss && lost.isConnectionLoss && lost.isSyntaxError)
    }

    /// The error `body` throws on a fresh connection (which is closed afterwards).
    static func serverError(_ body: (PostgresConnection) async throws -> Void) async throws -> DatabaseError {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        do {
            try await body(connection)
        } catch let error as DatabaseError {
            return error
        }
        throw SetupFailure(description: "the statement was expected to fail")
    }

    @Test func realUndefinedTableSchemaAndDataErrors() async throws {
        let table = try await Self.serverError { try await $0.query("SELECT * FROM siwa_no_such_table_x1") }
        #expect(table.isUndefinedTable && !table.isUndefinedSchema && !table.isConnectionLoss)
        let schema = try await Self.serverError { try await $0.simpleQuery(unsafeSQL: "CREATE TABLE siwa_no_such_schema_x1.t (i int)") }
        #expect(schema.isUndefinedSchema && !schema.isUndefinedTable)
        let division = try await Self.serverError { try await $0.query("SELECT 1 / \(0) AS x") }
        #expect(division.isDataException && division.sqlState == "22012")
    }

    @Test func realConstraintViolations() async throws {
        let setup = """
            CREATE TEMP TABLE parent (id int PRIMARY KEY);
            CREATE TEMP TABLE child (id int NOT NULL CHECK (id > 0), parent int REFERENCES parent (id))
            """
        let notNull = try await Self.serverError {
            try await $0.simpleQuery(unsafeSQL: setup)
            try await $0.execute("INSERT INTO child (id) VALUES (NULL)")
        }
        #expect(notNull.isNotNullViolation && notNull.isIntegrityConstraintViolation && !notNull.isUniqueViolation)
        let check = try await Self.serverError {
            try await $0.simpleQuery(unsafeSQL: setup)
            try await $0.execute("INSERT INTO child (id) VALUES (\(-1))")
        }
        #expect(check.isCheckViolation && check.isIntegrityConstraintViolation)
        let foreignKey = try await Self.serverError {
            try await $0.simpleQuery(unsafeSQL: setup)
            try await $0.execute("INSERT INTO child (id, parent) VALUES (1, \(42))")
        }
        #expect(foreignKey.isForeignKeyViolation && foreignKey.isIntegrityConstraintViolation)
    }

    @Test func realReadOnlyCanceledAndPrivilegeErrors() async throws {
        let readOnly = try await Self.serverError {
            try await $0.simpleQuery(unsafeSQL: "SET default_transaction_read_only = on")
            try await $0.simpleQuery(unsafeSQL: "CREATE TABLE siwa_read_only_probe (i int)")
        }
        #expect(readOnly.isReadOnlyTransaction && !readOnly.isConnectionLoss)
        let canceled = try await Self.serverError {
            try await $0.simpleQuery(unsafeSQL: "SET statement_timeout = '20ms'")
            try await $0.query("SELECT pg_sleep(\(30.0))")
        }
        #expect(canceled.isQueryCanceled && !canceled.isConnectionLoss)
        let role = TestDatabase.uniqueName("siwa_probe_role")
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "CREATE ROLE \(role) NOLOGIN")
        var privilege: DatabaseError?
        do {
            try await connection.simpleQuery(unsafeSQL: "SET ROLE \(role); CREATE TABLE public.\(role)_t (i int)")
        } catch {
            privilege = error
        }
        try await connection.simpleQuery(unsafeSQL: "RESET ROLE; DROP TABLE IF EXISTS public.\(role)_t; DROP ROLE \(role)")
        #expect(privilege?.isInsufficientPrivilege == true, "\(String(describing: privilege))")
    }

    @Test func realLockNotAvailableAndSerializationFailure() async throws {
        let table = TestDatabase.uniqueName("siwa_lock_probe")
        let holder = try await TestDatabase.connect()
        defer { holder.close() }
        try await holder.simpleQuery(unsafeSQL: "CREATE TABLE \(table) (id int PRIMARY KEY, n int); INSERT INTO \(table) VALUES (1, 0)")
        let locked = try await holder.transaction { holder in
            try await holder.simpleQuery(unsafeSQL: "LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE")
            return try await Self.serverError { try await $0.simpleQuery(unsafeSQL: "BEGIN; LOCK TABLE \(table) NOWAIT; COMMIT") }
        }
        #expect(locked.isLockNotAvailable && !locked.isTransactionRetryable)
        try await holder.simpleQuery(unsafeSQL: "BEGIN ISOLATION LEVEL REPEATABLE READ")
        _ = try await holder.query("SELECT n FROM \(unsafeSQL: table) WHERE id = 1")
        let other = try await TestDatabase.connect()
        defer { other.close() }
        try await other.execute("UPDATE \(unsafeSQL: table) SET n = n + 1 WHERE id = 1")
        var caught: DatabaseError?
        do {
            try await holder.execute("UPDATE \(unsafeSQL: table) SET n = n + 1 WHERE id = 1")
        } catch {
            caught = error
        }
        try await holder.simpleQuery(unsafeSQL: "ROLLBACK")
        let conflict = try #require(caught)
        #expect(conflict.isSerializationFailure && conflict.isTransactionRetryable)
        try await holder.simpleQuery(unsafeSQL: "DROP TABLE \(table)")
    }
}
