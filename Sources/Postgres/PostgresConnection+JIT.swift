extension PostgresConnection {
    /// Runs `body` in a transaction with PostgreSQL's JIT compiler off for it (`BEGIN; SET LOCAL
    /// jit = off`), one round trip more than the statement alone.
    ///
    /// For short statements whose cost estimate is inflated past `jit_above_cost` (100,000 by
    /// default) by a subplan the planner costs once per outer row over every partition, such as a
    /// probe per lease: PostgreSQL then compiles the statement with LLVM on every execution, which
    /// took 3.3 s of CPU for a statement that runs in 1 ms (issue #12). The transaction is the
    /// setting's scope, so it holds through a pooler in transaction mode too.
    /// - Throws: `DatabaseError`, from `body` or from `BEGIN`/`COMMIT`.
    public func withoutJIT<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await transaction(begin: "BEGIN; SET LOCAL jit = off", body)
    }
}

extension PostgresPool {
    /// `query` on one connection of the pool in a transaction without JIT (`PostgresConnection.withoutJIT`).
    /// - Returns: the statement's rows. - Throws: `DatabaseError`.
    public func queryWithoutJIT(_ sql: SQL) async throws -> [PostgresRow] {
        try await withConnection { conn in try await conn.withoutJIT { try await $0.query(sql) } }
    }
}
