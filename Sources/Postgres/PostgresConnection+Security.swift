import CLibPQ

/// How a connection reaches its server, as libpq made it: for `doctor`'s check that a database
/// on another host is reached with `sslmode=verify-full`
/// (https://www.postgresql.org/docs/15/libpq-ssl.html#LIBPQ-SSL-PROTECTION).
public struct ConnectionSecurity: Sendable, Equatable {
    /// `PQhost`: a host name, an address, or a Unix-domain socket directory (starts with `/`).
    public var host: String
    /// The `sslmode` in effect (`disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full`).
    public var sslMode: String
    /// Whether this connection is encrypted (`PQsslInUse`).
    public var encrypted: Bool

    /// True for a Unix-domain socket, `localhost`, or a loopback address (127.0.0.0/8, ::1).
    public var isLocal: Bool {
        host.isEmpty || host.hasPrefix("/") || host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    /// Why this connection is weaker than it should be, or nil: a remote server reached without
    /// `sslmode=verify-full` can be read or impersonated on the path.
    public var weakness: String? {
        guard !isLocal, sslMode != "verify-full" else { return nil }
        return "the database at \(String(host.prefix(100))) is reached with sslmode=\(sslMode)"
            + (encrypted ? " (encrypted, but the server's name is not verified)" : " (not encrypted)")
            + ": set sslmode=verify-full and sslrootcert in DATABASE_URL (or PGSSLMODE, PGSSLROOTCERT)"
    }
}

extension PostgresConnection {
    /// The host, `sslmode` and encryption of this connection (`PQhost`, `PQconninfo`, `PQsslInUse`).
    /// - Throws: `DatabaseError` when the connection is closed.
    public func security() async throws(DatabaseError) -> ConnectionSecurity {
        try await run { handle in
            let host = PQhost(handle).map { String(cString: $0) } ?? ""
            var mode = "prefer"
            if let options = PQconninfo(handle) {
                defer { PQconninfoFree(options) }
                var cursor = options
                while let keyword = cursor.pointee.keyword {
                    if String(cString: keyword) == "sslmode", let value = cursor.pointee.val { mode = String(cString: value) }
                    cursor += 1
                }
            }
            return .success(ConnectionSecurity(host: host, sslMode: mode, encrypted: PQsslInUse(handle) == 1))
        }
    }
}
