import Postgres

extension Doctor {
    /// Most workers named in the warning; the rest are counted.
    static let workersNamed = 5

    /// Live workers (`siwa.live_workers`) running another version than this binary: a warning,
    /// not a failure, since a rolling upgrade passes through it; but workers of two versions
    /// share the queue, so finish the upgrade (or stop the stragglers).
    func checkWorkerVersions(_ connection: PostgresConnection, _ report: inout DoctorReport) async throws {
        let rows = try await connection.query("""
            SELECT worker_id, version FROM siwa.live_workers ORDER BY host, started_at, worker_id
            """)
        let workers = try rows.map { row in
            (id: try row.decode("worker_id", as: String.self), version: try row.decode("version", as: String.self))
        }
        let others = workers.filter { $0.version != version }
        guard !others.isEmpty else {
            report.ok("worker versions", workers.isEmpty ? "no live workers" : "\(workers.count) live, all version \(version)")
            return
        }
        let named = others.prefix(Self.workersNamed).map { "\($0.id) (\($0.version))" }.joined(separator: ", ")
        let more = others.count > Self.workersNamed ? " and \(others.count - Self.workersNamed) more" : ""
        report.warn("worker versions", "\(others.count) of \(workers.count) live workers run another version than this "
            + "binary (\(version)): \(named)\(more); finish the upgrade, or stop them (siwa-jobs workers lists them)")
    }
}
