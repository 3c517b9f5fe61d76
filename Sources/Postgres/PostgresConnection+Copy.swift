import CLibPQ

extension PostgresConnection {
    /// Bulk load with `COPY ... FROM STDIN`: runs `copyStatement`, sends each chunk as copy data
    /// (`PQputCopyData`) and finishes with `PQputCopyEnd`. The statement decides the format
    /// (text or csv, delimiter, header); chunk boundaries need not align with rows.
    /// Returns the number of rows copied. A server error (bad row, constraint) throws `.query`
    /// and the whole COPY is rolled back. https://www.postgresql.org/docs/15/sql-copy.html
    public func copyFrom(_ copyStatement: SQL, chunks: some Sequence<[UInt8]> & Sendable) async throws(DatabaseError) -> Int {
        let secrets = self.secrets
        return try await run { handle in
            Self.copy(copyStatement, chunks: chunks, on: handle, secrets: secrets)
        }
    }

    private static func copy(
        _ statement: SQL, chunks: some Sequence<[UInt8]>, on handle: OpaquePointer, secrets: [String]
    ) -> Result<Int, DatabaseError> {
        let start: OpaquePointer?
        do {
            start = try withParameterArray(statement.binds) { count, values in
                PQexecParams(handle, statement.text, count, nil, values, nil, nil, 0)
            }
        } catch {
            return .failure(error)
        }
        if let start, PQresultStatus(start) != PGRES_COPY_IN, PQresultStatus(start) != PGRES_FATAL_ERROR {
            PQclear(start)
            return .failure(DatabaseError(kind: .protocolViolation, message: "statement is not COPY ... FROM STDIN"))
        }
        if let error = LibPQ.check(start, connection: handle, secrets: secrets, expected: [PGRES_COPY_IN]) {
            if let start { PQclear(start) }
            return .failure(error)
        }
        PQclear(start)

        var sendFailure: DatabaseError?
        for chunk in chunks where !chunk.isEmpty {
            guard chunk.count <= Int(Int32.max) else {
                sendFailure = DatabaseError(kind: .query, message: "COPY chunk larger than 2 GiB")
                break
            }
            let sent = chunk.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { base in
                    base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        PQputCopyData(handle, $0, Int32(buffer.count))
                    }
                } ?? 1
            }
            if sent != 1 {
                sendFailure = DatabaseError(kind: .connection, message: LibPQ.connectionMessage(handle, secrets: secrets),
                                            connectionWasLost: PQstatus(handle) == CONNECTION_BAD)
                break
            }
        }
        _ = PQputCopyEnd(handle, sendFailure == nil ? nil : "client aborted COPY")

        var outcome: Result<Int, DatabaseError> = sendFailure.map { .failure($0) } ?? .success(0)
        while let result = PQgetResult(handle) {
            if case .success = outcome {
                if let error = LibPQ.check(result, connection: handle, secrets: secrets, expected: [PGRES_COMMAND_OK]) {
                    outcome = .failure(error)
                } else {
                    outcome = .success(LibPQ.affectedRows(result))
                }
            }
            PQclear(result)
            if PQstatus(handle) == CONNECTION_BAD { break }
        }
        return outcome
    }
}
