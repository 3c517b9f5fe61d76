import CLibPQ

extension PostgresConnection {
    /// Runs one statement with `PQexecParams` (text-format binds, text results) and returns
    /// its rows (empty for statements without a result set). A server error throws `.query`
    /// with the SQLSTATE and leaves the connection usable.
    @discardableResult
    public func query(_ sql: SQL) async throws(DatabaseError) -> [PostgresRow] {
        let secrets = self.secrets, statements = self.statements
        return try await run { handle in
            Self.execute(sql, on: handle, secrets: secrets, statements: statements).map { result in
                defer { PQclear(result) }
                return LibPQ.rows(result)
            }
        }
    }

    /// Runs one statement with `PQexecParams` and returns the affected row count (`PQcmdTuples`;
    /// 0 for commands without one).
    @discardableResult
    public func execute(_ sql: SQL) async throws(DatabaseError) -> Int {
        let secrets = self.secrets, statements = self.statements
        return try await run { handle in
            Self.execute(sql, on: handle, secrets: secrets, statements: statements).map { result in
                defer { PQclear(result) }
                return LibPQ.affectedRows(result)
            }
        }
    }

    /// Runs trusted text that may hold several statements (`PQexec`, simple query protocol),
    /// e.g. a migration file. Statements outside an explicit transaction each commit on their
    /// own; processing stops at the first error, which is thrown.
    public func simpleQuery(unsafeSQL text: String) async throws(DatabaseError) {
        let secrets = self.secrets
        _ = try await run { handle in
            Self.simpleExecute(text, on: handle, secrets: secrets).map { result in
                let tag = LibPQ.commandTag(result)
                PQclear(result)
                return tag
            }
        }
    }

    /// `PQexec` of trusted text; returns the last command's tag (e.g. "ROLLBACK").
    func commandTag(unsafeSQL text: String) async throws(DatabaseError) -> String {
        let secrets = self.secrets
        return try await run { handle in
            Self.simpleExecute(text, on: handle, secrets: secrets).map { result in
                defer { PQclear(result) }
                return LibPQ.commandTag(result)
            }
        }
    }

    /// Blocking `PQexecParams` (or `PQexecPrepared` for a statement marked `reusingPlan()`, where
    /// the connection allows it); returns a successful result the caller must `PQclear`.
    static func execute(_ sql: SQL, on handle: OpaquePointer, secrets: [String],
                        statements: PreparedStatements? = nil) -> Result<OpaquePointer, DatabaseError> {
        if sql.reusesPlan, let statements,
           let prepared = executePrepared(sql, on: handle, secrets: secrets, statements: statements) {
            return prepared
        }
        let result: OpaquePointer?
        do {
            result = try withParameterArray(sql.binds) { count, values in
                PQexecParams(handle, sql.text, count, nil, values, nil, nil, 0)
            }
        } catch {
            return .failure(error)
        }
        return finish(result, on: handle, secrets: secrets, expected: [PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY])
    }

    /// Blocking `PQexec`; returns a successful result the caller must `PQclear`.
    static func simpleExecute(_ text: String, on handle: OpaquePointer, secrets: [String]) -> Result<OpaquePointer, DatabaseError> {
        finish(PQexec(handle, text), on: handle, secrets: secrets,
               expected: [PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY])
    }

    static func finish(
        _ result: OpaquePointer?, on handle: OpaquePointer, secrets: [String], expected: [ExecStatusType]
    ) -> Result<OpaquePointer, DatabaseError> {
        if let error = LibPQ.check(result, connection: handle, secrets: secrets, expected: expected) {
            if let result { PQclear(result) }
            return .failure(error)
        }
        guard let result else {
            return .failure(DatabaseError(kind: .protocolViolation, message: "libpq returned no result"))
        }
        return .success(result)
    }

    /// Packs all bind values into one contiguous NUL-separated buffer and calls `body` with the
    /// parameter count and a pointer array into it (NULL entries for SQL NULL). Throws `.query`
    /// for more than 65535 parameters or a value containing a NUL byte (PostgreSQL text cannot).
    static func withParameterArray<R>(
        _ binds: [String?], _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?) -> R
    ) throws(DatabaseError) -> R {
        guard binds.count <= 65535 else {
            throw DatabaseError(kind: .query, message: "too many bind parameters (\(binds.count), at most 65535)")
        }
        if binds.isEmpty { return body(0, nil) }
        var totalBytes = 0
        for bind in binds { totalBytes += (bind?.utf8.count ?? 0) + 1 }
        var storage: [UInt8] = []
        storage.reserveCapacity(totalBytes)
        var offsets: [Int] = []
        offsets.reserveCapacity(binds.count)
        for (index, bind) in binds.enumerated() {
            guard let bind else {
                offsets.append(-1)
                continue
            }
            let start = storage.count
            storage.append(contentsOf: bind.utf8)
            if storage[start...].contains(0) {
                throw DatabaseError(kind: .query, message: "bind parameter $\(index + 1) contains a NUL byte")
            }
            storage.append(0)
            offsets.append(start)
        }
        return storage.withUnsafeBytes { raw in
            let base = raw.baseAddress?.assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset < 0 ? nil : base.map { UnsafePointer($0 + offset) }
            }
            return pointers.withUnsafeBufferPointer { body(Int32(binds.count), $0.baseAddress) }
        }
    }
}
