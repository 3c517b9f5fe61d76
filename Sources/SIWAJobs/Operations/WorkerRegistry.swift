import Foundation
import Postgres

/// One process as the registry knows it (`siwa.workers`, `sql/0015_worker_registry.sql`): who it
/// is and what it runs. Built once when the process starts.
public struct WorkerRegistration: Sendable, Equatable {
    /// host:pid:random, the same id the worker leases items under.
    public var workerID: String
    public var host: String
    public var pid: Int32
    /// The binary's version string.
    public var version: String
    /// `work` or `notifications serve`.
    public var command: String
    /// When the process started (its own clock).
    public var startedAt: Date
    /// `work`: most items in flight (`--concurrency`); `notifications serve`: HTTP threads.
    public var concurrency: Int
    /// Job kinds it runs, sorted (empty for the receiver).
    public var kinds: [String]

    public init(workerID: String, host: String, pid: Int32, version: String, command: String, startedAt: Date,
                concurrency: Int, kinds: [String]) {
        self.workerID = workerID
        self.host = host
        self.pid = pid
        self.version = version
        self.command = command
        self.startedAt = startedAt
        self.concurrency = concurrency
        self.kinds = kinds
    }
}

/// What a process holds at one heartbeat.
public struct WorkerLoad: Sendable, Equatable {
    /// `work`: items it holds a lease on; `notifications serve`: HTTP connections open.
    public var inFlight: Int
    /// Apple requests per second this process holds of its teams' shared rate budget; nil when
    /// it reports none (no budget in use).
    public var appleRate: Double?

    public init(inFlight: Int, appleRate: Double? = nil) {
        self.inFlight = inFlight
        self.appleRate = appleRate
    }
}

/// How a process tells what it holds at each heartbeat: read on the heartbeat's task, so it must
/// be cheap and must not block (a lock-protected snapshot).
public typealias WorkerLoadSource = @Sendable () -> WorkerLoad

/// A row of `siwa.live_workers`: a process whose last heartbeat is within its timeout.
public struct LiveWorker: Sendable, Equatable {
    public var registration: WorkerRegistration
    public var load: WorkerLoad
    /// Seconds since its last heartbeat, by the database's clock.
    public var heartbeatAgeSeconds: Double
}

/// The registry table as a heartbeat writes it. One small protocol so the heartbeat can be tested
/// without a database.
public protocol WorkerHeartbeatStore: Sendable {
    /// Writes (or refreshes) the row of `registration` with `load`, expiring `timeout` after now,
    /// and deletes rows of other processes that have expired.
    /// - Returns: how many expired rows were deleted.
    /// - Throws: `DatabaseError`.
    func beat(_ registration: WorkerRegistration, load: WorkerLoad, timeout: Duration) async throws -> Int

    /// Deletes the row of `workerID` (a clean stop).
    /// - Throws: `DatabaseError`.
    func remove(workerID: String) async throws
}

/// `siwa.workers` on PostgreSQL: the heartbeat's writes and the live list (`siwa-jobs workers`,
/// `doctor`). Every statement is one round trip and holds nothing across transactions, so it works
/// through PgBouncer in transaction mode.
public struct WorkerRegistry: WorkerHeartbeatStore {
    private let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// One statement: the sweep skips rows another process is sweeping (`SKIP LOCKED`), so
    /// concurrent heartbeats never wait on each other.
    public func beat(_ registration: WorkerRegistration, load: WorkerLoad, timeout: Duration) async throws -> Int {
        let r = registration
        let rows = try await pool.query("""
            WITH swept AS (
                DELETE FROM siwa.workers WHERE worker_id IN (
                    SELECT worker_id FROM siwa.workers
                    WHERE expires_at < now() AND worker_id <> \(r.workerID)
                    FOR UPDATE SKIP LOCKED)
                RETURNING 1)
            INSERT INTO siwa.workers AS w (worker_id, host, pid, version, command, started_at, heartbeat_at, expires_at,
                                           concurrency, kinds, in_flight, apple_rate)
            VALUES (\(r.workerID), \(r.host), \(Int(r.pid)), \(r.version), \(r.command), \(r.startedAt), now(),
                    now() + make_interval(secs => \(timeout.seconds)), \(r.concurrency), \(r.kinds)::text[],
                    \(load.inFlight), \(load.appleRate)::float8)
            ON CONFLICT (worker_id) DO UPDATE SET
                heartbeat_at = now(), expires_at = EXCLUDED.expires_at, in_flight = EXCLUDED.in_flight,
                apple_rate = EXCLUDED.apple_rate
            RETURNING (SELECT count(*) FROM swept)::int AS swept
            """)
        return try rows.first?.decode("swept") ?? 0
    }

    public func remove(workerID: String) async throws {
        _ = try await pool.execute("DELETE FROM siwa.workers WHERE worker_id = \(workerID)")
    }

    /// The live processes, by host, then start time.
    /// - Throws: `DatabaseError` (`schemaMissing` before `migrate` created the table).
    public func live() async throws -> [LiveWorker] {
        let rows = try await pool.query("""
            SELECT worker_id, host, pid, version, command, started_at, concurrency, kinds, in_flight, apple_rate,
                   heartbeat_age_s
            FROM siwa.live_workers ORDER BY host, started_at, worker_id
            """)
        return try rows.map { row in
            LiveWorker(
                registration: WorkerRegistration(
                    workerID: try row.decode("worker_id"), host: try row.decode("host"), pid: try row.decode("pid"),
                    version: try row.decode("version"), command: try row.decode("command"),
                    startedAt: try row.decode("started_at"), concurrency: try row.decode("concurrency"),
                    kinds: try row.decode("kinds")),
                load: WorkerLoad(inFlight: try row.decode("in_flight"), appleRate: try row.decode("apple_rate")),
                heartbeatAgeSeconds: try row.decode("heartbeat_age_s"))
        }
    }
}
