import CLibPQ
import Dispatch
import Synchronization

/// One libpq connection (`PGconn`).
///
/// Not for concurrent use: one task at a time (take it from ``PostgresPool``). Every blocking
/// libpq call runs on this connection's own serial `DispatchQueue` and is bridged back with a
/// continuation, so no libpq call ever blocks a thread of Swift's cooperative pool. A statement
/// runs to completion even if the calling task is cancelled; bound long statements with
/// `statement_timeout`. https://www.postgresql.org/docs/15/libpq.html
public final class PostgresConnection: @unchecked Sendable {
    // @unchecked Sendable: `handle` is read and written only by blocks on the serial `queue`
    // (and by `deinit`, when no other reference exists); everything else is immutable or atomic.
    private var handle: OpaquePointer?
    private let queue: DispatchQueue
    private let brokenFlag = Atomic<Bool>(false)
    private let closedFlag = Atomic<Bool>(false)
    /// Passwords to scrub from libpq messages.
    let secrets: [String]
    /// Process ID of the server backend serving this connection (`PQbackendPID`).
    public let backendPID: Int32
    /// Statements prepared on this connection (`SQL.reusingPlan()`), used only on `queue`.
    let statements = PreparedStatements()

    private init(handle: OpaquePointer, queue: DispatchQueue, secrets: [String]) {
        self.handle = handle
        self.queue = queue
        self.secrets = secrets
        self.backendPID = PQbackendPID(handle)
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Opens a connection. Throws `.connection` (message without passwords) on failure.
    public static func connect(_ configuration: PostgresConfiguration) async throws(DatabaseError) -> PostgresConnection {
        let queue = DispatchQueue(label: "siwa.postgres.connection")
        let result: Result<PostgresConnection, DatabaseError> = await withCheckedContinuation { continuation in
            queue.async {
                let opened = openHandle(configuration).map { handle in
                    PostgresConnection(handle: handle, queue: queue, secrets: configuration.secretsToRedact)
                }
                continuation.resume(returning: opened)
            }
        }
        return try result.get()
    }

    /// True once libpq reports `CONNECTION_BAD` after a call, or after `close()`.
    public var isBroken: Bool {
        brokenFlag.load(ordering: .acquiring) || closedFlag.load(ordering: .acquiring)
    }

    /// Closes the connection after any statement already queued on it. Idempotent.
    public func close() {
        guard !closedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            if let handle {
                PQfinish(handle)
                self.handle = nil
            }
        }
    }

    /// Runs `operation` with the `PGconn` on this connection's queue and returns its result.
    func run<T: Sendable>(
        _ operation: @escaping @Sendable (OpaquePointer) -> Result<T, DatabaseError>
    ) async throws(DatabaseError) -> T {
        let result: Result<T, DatabaseError> = await withCheckedContinuation { continuation in
            queue.async { [self] in
                guard let handle else {
                    continuation.resume(returning: .failure(DatabaseError(
                        kind: .connection, message: "connection is closed", connectionWasLost: true)))
                    return
                }
                let outcome = operation(handle)
                if PQstatus(handle) == CONNECTION_BAD { brokenFlag.store(true, ordering: .releasing) }
                continuation.resume(returning: outcome)
            }
        }
        return try result.get()
    }

    /// Cheap, non-blocking liveness check for an idle connection: reads anything the server sent
    /// while idle (e.g. the FATAL message and EOF of a terminated backend) and reports whether
    /// the connection is still good. Only call while holding the connection exclusively with
    /// nothing queued on it (the pool does this on checkout).
    func probeIdleConnection() -> Bool {
        guard !isBroken, let handle else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        // A terminated backend sends an ErrorResponse, then EOF; one PQconsumeInput may read only
        // the message, so keep reading while the socket stays readable (EOF marks it bad).
        var reads = 0
        while reads < 8, clibpq_wait_socket(socket, 0, 0) > 0 {
            reads += 1
            if PQconsumeInput(handle) == 0 || PQstatus(handle) == CONNECTION_BAD {
                brokenFlag.store(true, ordering: .releasing)
                return false
            }
            while let notification = PQnotifies(handle) { PQfreemem(notification) }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// True if the connection is healthy and not inside a transaction block (so it can go back
    /// to a pool). Same calling rule as ``probeIdleConnection()``.
    func isReusable() -> Bool {
        guard !isBroken, let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Blocking connect; call only off the cooperative pool. Installs a notice processor that
    /// drops NOTICE/WARNING messages.
    static func openHandle(_ configuration: PostgresConfiguration) -> Result<OpaquePointer, DatabaseError> {
        let pairs = configuration.connectParameters
        let handle = withCStrings(pairs.map(\.0)) { keywords in
            withCStrings(pairs.map(\.1)) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let handle else {
            return .failure(DatabaseError(kind: .connection, message: "libpq could not allocate a connection"))
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            var secrets = configuration.secretsToRedact
            if let password = PQpass(handle) { secrets.append(String(cString: password)) }
            let raw = LibPQ.trimmed(PQerrorMessage(handle).map { String(cString: $0) } ?? "unknown error")
            let failure = ConnectionFailure.classify(message: raw, needsPassword: PQconnectionNeedsPassword(handle) == 1,
                                                     conninfoParses: configuration.isParseable)
            PQfinish(handle)
            // libpq quotes the fragment of an unparseable conninfo it stumbled on, which may be
            // part of a password: drop every quoted span then.
            let message = DatabaseError.redact(configuration.isParseable ? raw : DatabaseError.withoutQuotedText(raw),
                                               secrets: secrets)
            return .failure(DatabaseError(kind: .connection, sqlState: "08001", message: message,
                                          misconfiguredConnection: failure.misconfigured, hint: failure.hint))
        }
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        return .success(handle)
    }

    /// Calls `body` with a NULL-terminated array of C strings (valid only during the call).
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        var buffer: [CChar] = []
        var offsets: [Int] = []
        for string in strings {
            offsets.append(buffer.count)
            buffer.append(contentsOf: string.utf8.map { CChar(bitPattern: $0) })
            buffer.append(0)
        }
        return buffer.withUnsafeBufferPointer { storage in
            var pointers: [UnsafePointer<CChar>?] = offsets.map { offset in storage.baseAddress.map { $0 + offset } }
            pointers.append(nil)
            return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
        }
    }
}
