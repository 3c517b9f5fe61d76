import CLibPQ
import Foundation

/// Helpers that turn `PGresult`s into rows, counts and errors. All functions run on a
/// connection's queue and must be given a live `PGconn`.
enum LibPQ {
    /// Checks `result` (which may be nil) against the expected statuses; on failure returns an
    /// error built from the result's SQLSTATE and primary message. Does not clear `result`.
    static func check(
        _ result: OpaquePointer?, connection: OpaquePointer, secrets: [String], expected: [ExecStatusType]
    ) -> DatabaseError? {
        let lost = PQstatus(connection) == CONNECTION_BAD
        guard let result else {
            return DatabaseError(kind: lost ? .connection : .protocolViolation,
                                 message: connectionMessage(connection, secrets: secrets), connectionWasLost: lost)
        }
        let status = PQresultStatus(result)
        if expected.contains(status) { return nil }
        switch status {
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR:
            let sqlState = field(result, code: "C")
            let primary = field(result, code: "M")
                ?? firstLine(PQresultErrorMessage(result).map { String(cString: $0) } ?? "")
            let kind: DatabaseError.Kind = (sqlState == nil && lost) ? .connection : .query
            let message = primary.isEmpty ? connectionMessage(connection, secrets: secrets) : primary
            return DatabaseError(kind: kind, sqlState: sqlState,
                                 message: DatabaseError.redact(message, secrets: secrets), connectionWasLost: lost)
        default:
            let name = PQresStatus(status).map { String(cString: $0) } ?? "unknown"
            return DatabaseError(kind: .protocolViolation, message: "unexpected result status \(name)",
                                 connectionWasLost: lost)
        }
    }

    /// All rows of a `PGRES_TUPLES_OK` result (empty for other results).
    static func rows(_ result: OpaquePointer) -> [PostgresRow] {
        let rowCount = PQntuples(result)
        let fieldCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        var columns: [String] = []
        columns.reserveCapacity(Int(fieldCount))
        for field in 0..<fieldCount {
            columns.append(PQfname(result, field).map { String(cString: $0) } ?? "?column?")
        }
        let lookup = ColumnLookup(columns: columns)
        var rows: [PostgresRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(Int(fieldCount))
            for field in 0..<fieldCount {
                if PQgetisnull(result, row, field) != 0 {
                    values.append(nil)
                } else if let pointer = PQgetvalue(result, row, field) {
                    let length = Int(PQgetlength(result, row, field))
                    let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
                    values.append(String(decoding: bytes, as: UTF8.self))
                } else {
                    values.append(nil)
                }
            }
            rows.append(PostgresRow(columns: columns, values: values, lookup: lookup))
        }
        return rows
    }

    /// Rows affected (`PQcmdTuples`); 0 when the command reports no count.
    static func affectedRows(_ result: OpaquePointer) -> Int {
        guard let text = PQcmdTuples(result) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// Command tag, e.g. "COMMIT" or "ROLLBACK" (`PQcmdStatus`).
    static func commandTag(_ result: OpaquePointer) -> String {
        PQcmdStatus(result).map { String(cString: $0) } ?? ""
    }

    /// libpq's current error message for the connection, first line, passwords removed.
    static func connectionMessage(_ connection: OpaquePointer, secrets: [String]) -> String {
        let raw = PQerrorMessage(connection).map { String(cString: $0) } ?? ""
        let text = firstLine(raw)
        return DatabaseError.redact(text.isEmpty ? "connection failed without a message" : text, secrets: secrets)
    }

    /// `s` without surrounding whitespace; multi-line libpq messages are joined with "; ".
    static func trimmed(_ s: String) -> String {
        s.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }

    private static func firstLine(_ s: String) -> String {
        let line = s.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.trimmingCharacters(in: .whitespaces)
    }

    private static func field(_ result: OpaquePointer, code: Unicode.Scalar) -> String? {
        guard let pointer = PQresultErrorField(result, Int32(code.value)) else { return nil }
        return String(cString: pointer)
    }
}
