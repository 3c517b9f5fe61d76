import Foundation

/// A PostgreSQL failure: connecting, running a statement, decoding a value, or an unexpected
/// libpq state.
///
/// `description` is safe to log: it carries the kind, the SQLSTATE and the primary message only
/// (no SQL text, no parameter values, no DETAIL/HINT, which can quote row values). For data
/// exceptions (SQLSTATE class 22), whose primary messages quote the offending input, quoted
/// text is replaced by `"…"` in `description`; `message` keeps it for debugging.
/// SQLSTATE codes: https://www.postgresql.org/docs/15/errcodes-appendix.html
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// Could not connect, or the connection was lost.
        case connection
        /// The server rejected a statement (see `sqlState`).
        case query
        /// A column value could not be turned into the requested Swift type.
        case decoding
        /// libpq or the server answered in a way this layer does not expect.
        case protocolViolation
    }

    public let kind: Kind
    /// Five-character SQLSTATE, e.g. "23505" (unique violation), "40001", "08006"; nil if the
    /// error did not come from the server.
    public let sqlState: String?
    /// Primary message. For connection errors: libpq's message with passwords removed.
    public let message: String
    /// True if the connection was unusable (`PQstatus == CONNECTION_BAD`) after the failed call.
    public let connectionWasLost: Bool
    /// True when a connection attempt failed because of its settings (wrong password, unknown
    /// database or role, a parameter libpq refuses), not the network. See `meaning`.
    let misconfiguredConnection: Bool
    /// For a failed connect: which setting is likely wrong or what to check (fixed text, never a
    /// value from the settings), e.g. "unknown database: check PGDATABASE …". Part of `description`.
    public let hint: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, connectionWasLost: Bool = false,
                misconfiguredConnection: Bool = false, hint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.connectionWasLost = connectionWasLost
        self.misconfiguredConnection = misconfiguredConnection
        self.hint = hint
    }

    public var description: String {
        let kindName: String
        switch kind {
        case .connection: kindName = "connection"
        case .query: kindName = "query"
        case .decoding: kindName = "decoding"
        case .protocolViolation: kindName = "protocol"
        }
        var text = "PostgreSQL \(kindName) error"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        text += ": " + (isDataException ? Self.withoutQuotedText(message) : message)
        if let hint { text += " (\(hint))" }
        return text
    }

    /// `message` with every double-quoted span replaced by `"…"`.
    static func withoutQuotedText(_ message: String) -> String {
        var result = ""
        var inQuotes = false
        for character in message {
            if character == "\"" {
                result.append(inQuotes ? "…\"" : "\"")
                inQuotes.toggle()
            } else if !inQuotes {
                result.append(character)
            }
        }
        if inQuotes { result.append("…") }
        return result
    }
}

/// SQLSTATE classes and conditions this code base acts on, so callers never compare raw codes
/// (PostgreSQL 15 Appendix A, https://www.postgresql.org/docs/15/errcodes-appendix.html). Each is
/// false when the error carries no SQLSTATE, except `isConnectionLoss`, which also covers
/// client-side connection failures.
extension DatabaseError {
    /// The two-character SQLSTATE class, e.g. `23` for `23505`; nil without a SQLSTATE.
    public var sqlStateClass: String? { sqlState.map { String($0.prefix(2)) } }

    /// True for connection errors, SQLSTATE class 08 (connection exception), admin or crash
    /// shutdown and "cannot connect now" (57P01, 57P02, 57P03), or when libpq reported the
    /// connection as bad after the call. The pool replaces such connections.
    public var isConnectionLoss: Bool {
        if kind == .connection || connectionWasLost { return true }
        return sqlStateClass == "08" || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }

    /// Class 28, invalid authorization specification: unknown role or wrong password (28000, 28P01).
    public var isInvalidCredentials: Bool { sqlStateClass == "28" }

    /// 3D000 invalid_catalog_name: the database named in the connection does not exist.
    public var isUnknownDatabase: Bool { sqlState == "3D000" }

    /// 42P01 undefined_table: a table or view the statement names does not exist.
    public var isUndefinedTable: Bool { sqlState == "42P01" }

    /// 3F000 invalid_schema_name: the schema the statement names does not exist.
    public var isUndefinedSchema: Bool { sqlState == "3F000" }

    /// 42501 insufficient_privilege: the role may not do this (e.g. the read-only dashboard role
    /// writing, or the worker role running DDL).
    public var isInsufficientPrivilege: Bool { sqlState == "42501" }

    /// 57014 query_canceled: `statement_timeout` expired or the statement was cancelled.
    public var isQueryCanceled: Bool { sqlState == "57014" }

    /// 55P03 lock_not_available: `lock_timeout` expired or `NOWAIT` found the row or table locked.
    public var isLockNotAvailable: Bool { sqlState == "55P03" }

    /// 40001 serialization_failure (a concurrent update under REPEATABLE READ or SERIALIZABLE).
    public var isSerializationFailure: Bool { sqlState == "40001" }

    /// 40P01 deadlock_detected: the server aborted this transaction to break a deadlock.
    public var isDeadlock: Bool { sqlState == "40P01" }

    /// Serialization failure (40001) or deadlock (40P01): the whole transaction may be retried.
    public var isTransactionRetryable: Bool { isSerializationFailure || isDeadlock }

    /// 25006 read_only_sql_transaction: a write reached a read-only transaction or a hot standby
    /// (e.g. right after a failover, before the connection reaches the new primary).
    public var isReadOnlyTransaction: Bool { sqlState == "25006" }

    /// Class 23, integrity constraint violation: unique, foreign key, not-null, check, exclusion.
    public var isIntegrityConstraintViolation: Bool { sqlStateClass == "23" }

    /// 23505 unique_violation.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// 23503 foreign_key_violation.
    public var isForeignKeyViolation: Bool { sqlState == "23503" }

    /// 23502 not_null_violation.
    public var isNotNullViolation: Bool { sqlState == "23502" }

    /// 23514 check_violation.
    public var isCheckViolation: Bool { sqlState == "23514" }

    /// Class 22, data exception: a value the statement cannot use (bad input syntax, out of range,
    /// division by zero). `description` hides quoted input for this class.
    public var isDataException: Bool { sqlStateClass == "22" }

    /// Class 53, insufficient resources: too many connections (53300), disk or memory full.
    public var isInsufficientResources: Bool { sqlStateClass == "53" }

    /// 42601 syntax_error.
    public var isSyntaxError: Bool { sqlState == "42601" }
}

extension DatabaseError {
    static func decoding(_ message: String) -> DatabaseError {
        DatabaseError(kind: .decoding, message: message)
    }

    /// Removes every occurrence of each secret (e.g. passwords) from `text`, and the password part
    /// of anything shaped like `scheme://user:password@host`.
    static func redact(_ text: String, secrets: [String]) -> String {
        var result = text
        for secret in secrets where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return scrubURIPasswords(result)
    }

    /// `postgres://user:secret@host` becomes `postgres://user:<redacted>@host`.
    static func scrubURIPasswords(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            out += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " || $0 == "\"" }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                out += authority[...colon] + "<redacted>" + authority[at...]
                rest = rest[authorityEnd...]
            }
        }
        return out + rest
    }
}
