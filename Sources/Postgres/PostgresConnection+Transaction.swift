extension PostgresConnection {
    /// Runs `body` inside `BEGIN` ... `COMMIT` and returns its value.
    ///
    /// If `body` throws, the transaction is rolled back (`ROLLBACK`, its own failure ignored) and
    /// the error rethrown. If `COMMIT` fails (e.g. SQLSTATE 40001) its error is thrown. If the
    /// transaction had already failed (a statement error was caught inside `body`), `COMMIT`
    /// rolls back and this throws `.query` with SQLSTATE 25P02.
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await transaction(begin: "BEGIN", body)
    }

    /// Like ``transaction(_:)`` with a custom begin statement, e.g.
    /// `BEGIN ISOLATION LEVEL SERIALIZABLE` (trusted text).
    public func transaction<T: Sendable>(
        begin beginStatement: String, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await simpleQuery(unsafeSQL: beginStatement)
        let value: T
        do {
            value = try await body(self)
        } catch {
            if !isBroken { _ = try? await commandTag(unsafeSQL: "ROLLBACK") }
            throw error
        }
        let tag = try await commandTag(unsafeSQL: "COMMIT")
        guard tag == "COMMIT" else {
            throw DatabaseError(kind: .query, sqlState: "25P02",
                                message: "transaction was aborted by an earlier error; COMMIT rolled it back")
        }
        return value
    }
}
