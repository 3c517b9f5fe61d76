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

    public init(kind: Kind, sqlState: String? = nil, message: String, connectionWasLost: Bool = false) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.connectionWasLost = connectionWasLost
    }

    /// True for connection errors, SQLSTATE class 08, admin/crash shutdown (57P01...57P03), or when
    /// libpq reported the connection as bad after the call. The pool replaces such connections.
    public var isConnectionLoss: Bool {
        if kind == .connection || connectionWasLost { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }

    /// Unique violation (23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// Serialization failure (40001) or deadlock (40P01): the whole transaction may be retried.
    public var isTransactionRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// The server refused our role or password (class 28: 28000, 28P01).
    public var isInvalidCredentials: Bool { sqlState == "28000" || sqlState == "28P01" }

    /// The database named in the connection settings does not exist (3D000).
    public var isUnknownDatabase: Bool { sqlState == "3D000" }

    /// A table (42P01) or schema (3F000) the statement names does not exist: typically, migrations
    /// were not applied.
    public var isUndefinedTable: Bool { sqlState == "42P01" || sqlState == "3F000" }

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
        return text + ": " + Self.logSafe(message, sqlState: sqlState)
    }

    private static func logSafe(_ message: String, sqlState: String?) -> String {
        guard let sqlState, sqlState.hasPrefix("22") else { return message }
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
