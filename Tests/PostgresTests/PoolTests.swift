import Foundation
import Postgres
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(5))) struct PoolTests {
    @Test func twoHundredTasksShareFourConnectionsExclusively() async throws {
        let pool = PostgresPool(configuration: TestDatabase.configuration(), size: 4)
        let tracker = CheckoutTracker()
        let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<200 {
                group.addTask {
                    try await pool.withConnection { connection in
                        tracker.enter(connection)
                        defer { tracker.leave(connection) }
                        let row = try await connection.query("SELECT pg_backend_pid() AS pid, \(index)::int AS i")
                        #expect(try row[0].decode("i", as: Int.self) == index)
                        return try row[0].decode("pid", as: Int32.self)
                    }
                }
            }
            var pids: [Int32] = []
            for try await pid in group { pids.append(pid) }
            return pids
        }
        await pool.close()
        #expect(pids.count == 200)
        #expect(tracker.overlaps.load(ordering: .relaxed) == 0)
        #expect(Set(pids).count <= 4)
    }

    @Test func poolReplacesAConnectionWhoseBackendWasTerminated() async throws {
        let pool = PostgresPool(configuration: TestDatabase.configuration(), size: 1)
        let firstPID = try await pool.withConnection { $0.backendPID }
        #expect(try await TestDatabase.terminate(pid: firstPID) == 1)
        let (secondPID, one) = try await pool.withConnection { connection in
            (connection.backendPID, try await connection.query("SELECT 1 AS one")[0].decode("one", as: Int.self))
        }
        #expect(one == 1)
        #expect(secondPID != firstPID)

        // Killed while checked out: that caller sees a connection loss, the next one succeeds.
        do {
            try await pool.withConnection { connection in
                _ = try await TestDatabase.terminate(pid: connection.backendPID)
                try await connection.query("SELECT 1")
            }
            Issue.record("expected a connection loss")
        } catch let error as DatabaseError {
            #expect(error.isConnectionLoss)
        }
        let pid = try await pool.withConnection { connection in
            try await connection.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int32.self)
        }
        #expect(pid != secondPID)
        await pool.close()
    }

    @Test func connectionLeftInATransactionIsNotReused() async throws {
        let pool = PostgresPool(configuration: TestDatabase.configuration(), size: 1)
        let leaked = try await pool.withConnection { connection in
            try await connection.simpleQuery(unsafeSQL: "BEGIN")
            return connection.backendPID
        }
        let rows = try await pool.query("SELECT pg_backend_pid() AS pid")
        #expect(try rows[0].decode("pid", as: Int32.self) != leaked)
        let inserted = try await pool.transaction { connection in
            try await connection.execute("SELECT 1 FROM generate_series(1, 3)")
        }
        #expect(inserted == 3)
        await pool.close()
    }

    @Test func closedPoolRefusesCheckouts() async throws {
        let pool = PostgresPool(configuration: TestDatabase.configuration(), size: 2)
        try await pool.withConnection { try await $0.query("SELECT 1") }
        await pool.close()
        await #expect(throws: DatabaseError.self) { try await pool.withConnection { _ in 1 } }
    }

    @Test func unreachableServerFailsCheckoutAndFreesTheSlot() async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(conninfo: "host=127.0.0.1 port=1", connectTimeoutSeconds: 2), size: 1)
        for _ in 0..<3 {
            do {
                _ = try await pool.withConnection { _ in 1 }
                Issue.record("expected a connection error")
            } catch let error as DatabaseError {
                #expect(error.kind == .connection)
            }
        }
        await pool.close()
    }

    /// Concurrent `pg_sleep(1)` calls on twice as many connections as the cooperative pool has
    /// threads must not occupy that pool: a task ticking every 10 ms keeps running meanwhile.
    /// (If libpq blocked cooperative threads, every one of them would be stuck for ~2 s.)
    @Test func blockingLibpqCallsDoNotStarveTheCooperativePool() async throws {
        let sleeperCount = 2 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        var connections: [PostgresConnection] = []
        for _ in 0..<sleeperCount { connections.append(try await TestDatabase.connect()) }
        defer { connections.forEach { $0.close() } }
        let ticks = TickCounter()
        let ticker = Task {
            while !ticks.done.load(ordering: .acquiring) {
                try? await Task.sleep(for: .milliseconds(10))
                ticks.count.add(1, ordering: .relaxed)
            }
        }
        defer { ticks.done.store(true, ordering: .releasing) }   // the ticker ends even if a query throws
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask { try await connection.query("SELECT pg_sleep(1)") }
            }
            try await group.waitForAll()
        }
        let ticksDuringSleep = ticks.count.load(ordering: .relaxed)
        ticks.done.store(true, ordering: .releasing)
        await ticker.value
        #expect(ticksDuringSleep >= 5, "ticker advanced only \(ticksDuringSleep) times during 1 s of pg_sleep")
    }
}

/// Records connections currently checked out; counts any checkout of one already in use.
private final class CheckoutTracker: Sendable {
    let inUse = Mutex<Set<ObjectIdentifier>>([])
    let overlaps = Atomic<Int>(0)

    func enter(_ connection: PostgresConnection) {
        if !inUse.withLock({ $0.insert(ObjectIdentifier(connection)).inserted }) { overlaps.add(1, ordering: .relaxed) }
    }

    func leave(_ connection: PostgresConnection) {
        inUse.withLock { _ = $0.remove(ObjectIdentifier(connection)) }
    }
}

private final class TickCounter: Sendable {
    let count = Atomic<Int>(0)
    let done = Atomic<Bool>(false)
}
