import CLibPQ

/// The named prepared statements of one connection, by SQL text. Read and written only on the
/// connection's serial queue (hence `@unchecked Sendable`).
final class PreparedStatements: @unchecked Sendable {
    /// Statements kept at most; past it, everything is deallocated and prepared again as used.
    static let capacity = 128
    /// Whether this connection may prepare: nil until first asked, then whether the server's
    /// `pg_backend_pid()` is the process libpq connected to (a pooler answers with its own).
    var allowed: Bool?
    var names: [String: String] = [:]
    var nextNumber = 0
}

extension PostgresConnection {
    /// `PQexecPrepared` of `sql` under a name prepared once on this connection (`PQprepare`),
    /// or nil when the connection must not prepare (a pooler in between), so the caller runs it
    /// unnamed. A statement that vanished (SQLSTATE 26000, e.g. after `DISCARD ALL`) or whose
    /// cached plan no longer fits its result (0A000, after a migration changed a table) is
    /// forgotten and the caller runs it unnamed this once.
    static func executePrepared(_ sql: SQL, on handle: OpaquePointer, secrets: [String],
                                statements: PreparedStatements) -> Result<OpaquePointer, DatabaseError>? {
        if statements.allowed == nil { statements.allowed = isDirect(handle) }
        guard statements.allowed == true, PQtransactionStatus(handle) == PQTRANS_IDLE else { return nil }
        let expected = [PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY]
        let name: String
        if let known = statements.names[sql.text] {
            name = known
        } else {
            if statements.names.count >= PreparedStatements.capacity {
                PQclear(PQexec(handle, "DEALLOCATE ALL"))
                statements.names = [:]
            }
            statements.nextNumber += 1
            name = "siwa_\(statements.nextNumber)"
            let prepared = finish(PQprepare(handle, name, sql.text, Int32(sql.binds.count), nil), on: handle,
                                  secrets: secrets, expected: [PGRES_COMMAND_OK])
            switch prepared {
            case .failure(let error): return .failure(error)
            case .success(let result): PQclear(result)
            }
            statements.names[sql.text] = name
        }
        let outcome: Result<OpaquePointer, DatabaseError>
        do {
            outcome = finish(try withParameterArray(sql.binds) { count, values in
                PQexecPrepared(handle, name, count, values, nil, nil, 0)
            }, on: handle, secrets: secrets, expected: expected)
        } catch {
            return .failure(error)
        }
        if case .failure(let error) = outcome, error.sqlState == "26000" || error.sqlState == "0A000" {
            statements.names[sql.text] = nil
            if error.sqlState == "0A000" { PQclear(PQexec(handle, "DEALLOCATE \(name)")) }
            return nil
        }
        return outcome
    }

    /// True when the server process answering is the one libpq connected to: no pooler between.
    private static func isDirect(_ handle: OpaquePointer) -> Bool {
        guard let result = PQexec(handle, "SELECT pg_backend_pid()") else { return false }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1,
              let value = PQgetvalue(result, 0, 0) else { return false }
        return Int32(String(cString: value)) == PQbackendPID(handle)
    }
}
