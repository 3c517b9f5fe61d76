import CLibPQ
import Foundation

/// LISTEN, and the checks that it can deliver (`PostgresListener.Options`), on the listener's thread.
extension ListenerLoop {
    enum Establishment {
        /// LISTEN is in place and notifications arrive.
        case listening
        /// The connection or a statement failed: reconnect with backoff.
        case failed
        /// Notifications cannot arrive over this connection: give up, say why.
        case unavailable(String)
    }

    /// Checks for a pooler, LISTENs on every channel, then checks that a NOTIFY from another
    /// connection arrives.
    func establish(_ handle: OpaquePointer) -> Establishment {
        if options.refusesPoolers {
            guard let serverPID = serverBackendPID(handle) else { return .failed }
            let given = PQbackendPID(handle)
            if serverPID != given {
                return .unavailable("the connection goes through a connection pooler (the server's backend process is "
                    + "\(serverPID), libpq was given \(given)), which cannot deliver notifications in transaction mode")
            }
        }
        let probe = options.deliveryCheckTimeout.map { _ in "siwa_listen_probe_\(getpid())_\(UInt32.random(in: 0...UInt32.max))" }
        guard execute((channels + [probe].compactMap { $0 }).map { "LISTEN \(SQL.quoteIdentifier($0))" }, on: handle) else {
            return .failed
        }
        guard let probe, let timeout = options.deliveryCheckTimeout else { return .listening }
        switch notifyArrives(on: handle, channel: probe, within: timeout) {
        case true?:
            _ = execute(["UNLISTEN \(SQL.quoteIdentifier(probe))"], on: handle)
            return .listening
        case false?:
            // Best effort: where the pooler hands this server connection out next, it stops listening.
            _ = execute(["UNLISTEN *"], on: handle)
            return .unavailable("a NOTIFY sent from another connection did not arrive within \(Self.seconds(timeout)) s "
                + "(a connection pooler in transaction mode, such as PgBouncer, accepts LISTEN but cannot deliver)")
        case nil:
            return .failed
        }
    }

    /// `pg_backend_pid()` as the server reports it; nil when the query failed.
    private func serverBackendPID(_ handle: OpaquePointer) -> Int32? {
        guard case .success(let result) = PostgresConnection.simpleExecute("SELECT pg_backend_pid()", on: handle, secrets: []) else {
            return nil
        }
        defer { PQclear(result) }
        guard PQntuples(result) == 1, let text = PQgetvalue(result, 0, 0) else { return nil }
        return Int32(String(cString: text))
    }

    /// Runs `statements` as one simple query; false when it failed.
    private func execute(_ statements: [String], on handle: OpaquePointer) -> Bool {
        guard !statements.isEmpty else { return true }
        guard case .success(let result) = PostgresConnection.simpleExecute(
            statements.joined(separator: "; "), on: handle, secrets: configuration.secretsToRedact) else { return false }
        PQclear(result)
        return true
    }

    /// Sends NOTIFY `channel` from a second connection, then waits for it on `handle`, yielding
    /// other notifications as they come.
    /// - Returns: true when it arrived, false when it did not within `timeout`, nil when a
    ///   connection failed (the caller retries).
    private func notifyArrives(on handle: OpaquePointer, channel: String, within timeout: Duration) -> Bool? {
        guard case .success(let sender) = PostgresConnection.openHandle(configuration) else { return nil }
        let sent = execute(["NOTIFY \(SQL.quoteIdentifier(channel))"], on: sender)
        PQfinish(sender)
        guard sent else { return nil }
        let deadline = DispatchTime.now() + .nanoseconds(Int(Self.seconds(timeout) * 1_000_000_000))
        while !control.shouldStop {
            if deliverPending(handle, probe: channel) { return true }
            guard DispatchTime.now() < deadline else { return false }
            guard waitForInput(handle, milliseconds: 100) else { return nil }
        }
        return nil
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
