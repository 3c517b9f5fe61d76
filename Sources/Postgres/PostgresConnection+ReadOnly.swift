extension PostgresConnection {
    /// Why this session cannot write, or nil when it can: the server is a hot standby
    /// (`pg_is_in_recovery()`), or its transactions are read-only by default
    /// (`default_transaction_read_only`, e.g. set with `ALTER DATABASE … SET` or `ALTER ROLE … SET`,
    /// as some failover tools do to a demoted primary).
    /// https://www.postgresql.org/docs/15/hot-standby.html
    /// - Throws: `DatabaseError` when the check itself fails.
    public func readOnlyReason() async throws(DatabaseError) -> String? {
        let rows = try await query("""
            SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') = 'on' AS read_only
            """)
        guard let row = rows.first else { return nil }
        if try row.decode("standby", as: Bool.self) {
            return "the server is a hot standby (in recovery): a standby named by mistake, or a failover in progress"
        }
        if try row.decode("read_only", as: Bool.self) {
            return "transactions are read-only here (default_transaction_read_only is on for this database or role): "
                + "a demoted primary, or a setting left on"
        }
        return nil
    }

    /// - Throws: `DatabaseError.readOnly` (meaning `.readOnly`) when `readOnlyReason()` finds one;
    ///   `DatabaseError` when the check fails.
    public func requireWritable() async throws(DatabaseError) {
        if let reason = try await readOnlyReason() { throw DatabaseError.readOnly(reason) }
    }
}
