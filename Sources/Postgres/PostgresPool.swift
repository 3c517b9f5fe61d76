import Synchronization

/// A fixed-size pool of ``PostgresConnection``s with exclusive checkout.
///
/// Connections open lazily, up to `size`. `withConnection` waits (FIFO) while all are in use.
/// On checkout an idle connection is probed without blocking; a broken one (e.g. its backend was
/// terminated while idle) is closed and replaced by a fresh connection. A connection that breaks
/// while in use fails that caller's statement with an error whose `isConnectionLoss` is true and
/// is replaced on the next checkout. A connection returned inside an open transaction block (e.g. a
/// manual `BEGIN` without `COMMIT`) is closed rather than reused. Waiting callers are not
/// cancellable.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration
    /// Maximum number of open connections.
    public let size: Int
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var idle: [PostgresConnection] = []
        /// Slots taken: idle + checked out + being opened.
        var slotsInUse = 0
        var waiters: [CheckedContinuation<Result<Grant, DatabaseError>, Never>] = []
        var waiterHead = 0
        var closed = false

        mutating func popWaiter() -> CheckedContinuation<Result<Grant, DatabaseError>, Never>? {
            guard waiterHead < waiters.count else { return nil }
            let waiter = waiters[waiterHead]
            waiterHead += 1
            if waiterHead > 64, waiterHead * 2 > waiters.count {
                waiters.removeFirst(waiterHead)
                waiterHead = 0
            }
            return waiter
        }
    }

    /// What a checkout receives: an open idle connection, or permission to open one.
    private enum Grant: Sendable {
        case connection(PostgresConnection)
        case slot
    }

    /// - Parameters:
    ///   - configuration: how to connect.
    ///   - size: maximum open connections (at least 1).
    public init(configuration: PostgresConfiguration, size: Int) {
        self.configuration = configuration
        self.size = max(1, size)
    }

    /// Checks out a connection for the duration of `body`, then returns it to the pool (or
    /// closes it if it broke). Throws `.connection` if the pool is closed or a new connection
    /// cannot be opened, and rethrows whatever `body` throws.
    @discardableResult
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await checkout()
        do {
            let value = try await body(connection)
            checkin(connection)
            return value
        } catch {
            checkin(connection)
            throw error
        }
    }

    /// `withConnection { try await $0.transaction(body) }`.
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in try await connection.transaction(body) }
    }

    /// One statement on any pooled connection; see ``PostgresConnection/query(_:)``.
    @discardableResult
    public func query(_ sql: SQL) async throws -> [PostgresRow] {
        try await withConnection { connection in try await connection.query(sql) }
    }

    /// One statement on any pooled connection; see ``PostgresConnection/execute(_:)``.
    @discardableResult
    public func execute(_ sql: SQL) async throws -> Int {
        try await withConnection { connection in try await connection.execute(sql) }
    }

    /// Closes idle connections now and in-use ones when they are returned; fails waiting and
    /// future checkouts with `.connection`.
    public func close() async {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            let idle = state.idle
            state.idle = []
            state.slotsInUse -= idle.count
            var waiters: [CheckedContinuation<Result<Grant, DatabaseError>, Never>] = []
            while let waiter = state.popWaiter() { waiters.append(waiter) }
            return (idle, waiters)
        }
        idle.forEach { $0.close() }
        waiters.forEach { $0.resume(returning: .failure(Self.closedError)) }
    }

    private static let closedError = DatabaseError(kind: .connection, message: "connection pool is closed")

    private func checkout() async throws(DatabaseError) -> PostgresConnection {
        if case .connection(let connection) = try await acquire() {
            if connection.probeIdleConnection() { return connection }
            connection.close()  // broken while idle: open a replacement in its slot
        }
        do {
            return try await PostgresConnection.connect(configuration)
        } catch {
            releaseSlot()
            throw error
        }
    }

    private func acquire() async throws(DatabaseError) -> Grant {
        let result: Result<Grant, DatabaseError> = await withCheckedContinuation { continuation in
            let immediate: Result<Grant, DatabaseError>? = state.withLock { state in
                if state.closed { return .failure(Self.closedError) }
                if let connection = state.idle.popLast() { return .success(.connection(connection)) }
                if state.slotsInUse < size {
                    state.slotsInUse += 1
                    return .success(.slot)
                }
                state.waiters.append(continuation)
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
        return try result.get()
    }

    private func checkin(_ connection: PostgresConnection) {
        if !connection.isReusable() {  // broken, or left inside a transaction block
            connection.close()
            releaseSlot()
            return
        }
        let waiter: CheckedContinuation<Result<Grant, DatabaseError>, Never>?? = state.withLock { state in
            if state.closed {
                state.slotsInUse -= 1
                return .some(nil)
            }
            if let waiter = state.popWaiter() { return waiter }
            state.idle.append(connection)
            return nil
        }
        switch waiter {
        case .some(.some(let waiter)): waiter.resume(returning: .success(.connection(connection)))
        case .some(.none): connection.close()
        case .none: break
        }
    }

    /// Gives a freed slot to the next waiter (who will open a connection) or frees it.
    private func releaseSlot() {
        let waiter: CheckedContinuation<Result<Grant, DatabaseError>, Never>? = state.withLock { state in
            if !state.closed, let waiter = state.popWaiter() { return waiter }
            state.slotsInUse -= 1
            return nil
        }
        waiter?.resume(returning: .success(.slot))
    }
}
