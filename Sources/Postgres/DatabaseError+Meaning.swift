/// What a database failure means to a caller deciding whether to retry, stop or fail an item.
///
/// One classification for the whole code base (issue #8): the queue's flusher, the worker's
/// stop decision and the CLI's exit code all branch on `DatabaseError.meaning`, never on raw
/// SQLSTATEs. Only `.badData` may ever fail an item; everything else leaves it untouched.
public enum DatabaseFailureMeaning: Sendable, Equatable {
    /// Try the same statement or transaction again later: connection lost or refused, server
    /// shutting down, statement timeout or cancel (57014), lock timeout (55P03), serialization
    /// failure or deadlock (40001, 40P01), insufficient resources (class 53). Exit 75.
    case transient
    /// A write reached a read-only transaction or a hot standby (25006). Exit 75 with a clear
    /// message: it is usually a failover in progress, or a standby named by mistake.
    case readOnly
    /// The connection settings are wrong: bad password or unknown role (class 28), unknown
    /// database (3D000), or a connection parameter libpq refuses. Retrying cannot help. Exit 78.
    case misconfigured
    /// The role lacks a privilege (42501). Exit 78.
    case permission
    /// The siwa schema, or a table or column in it, is missing (42P01, 3F000, 42703). Exit 78:
    /// run `siwa-jobs migrate`.
    case schemaMissing
    /// The statement's data is refused: an integrity constraint (class 23) or a data exception
    /// (class 22). The only meaning that may fail an individual item.
    case badData
    /// Anything else (syntax errors, protocol surprises, decoding failures). Exit 70.
    case unexpected
}

extension DatabaseError {
    /// This failure's meaning (see `DatabaseFailureMeaning`).
    public var meaning: DatabaseFailureMeaning {
        if isConnectionMisconfiguration { return .misconfigured }
        if isInvalidCredentials || isUnknownDatabase { return .misconfigured }
        if isConnectionLoss { return .transient }
        if isReadOnlyTransaction { return .readOnly }
        if isQueryCanceled || isLockNotAvailable || isTransactionRetryable || isInsufficientResources {
            return .transient
        }
        if isInsufficientPrivilege { return .permission }
        if isUndefinedTable || isUndefinedSchema || sqlState == "42703" { return .schemaMissing }
        if isIntegrityConstraintViolation || isDataException { return .badData }
        return .unexpected
    }

    /// True when a connection attempt failed because of the settings rather than the network:
    /// set by the connection layer from libpq's message (libpq reports 08001 for every failed
    /// connect, so the SQLSTATE alone cannot tell).
    public var isConnectionMisconfiguration: Bool { misconfiguredConnection }
}

extension DatabaseError {
    /// A read-only database found by a check before any write (`PostgresConnection.requireWritable()`):
    /// SQLSTATE 25006, what the first write would get, so its meaning is `.readOnly`.
    /// - Parameter reason: what was found, e.g. "the server is a hot standby".
    public static func readOnly(_ reason: String) -> DatabaseError {
        DatabaseError(kind: .query, sqlState: "25006", message: "the database is read-only: \(reason)")
    }
}
