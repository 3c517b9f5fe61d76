import Foundation
import Postgres
import Synchronization
import Testing
@testable import SIWAJobs

/// Imported refresh tokens are sealed before any byte reaches PostgreSQL: a scan of the staging
/// table (inside the import's transaction), every table and view, the WAL written meanwhile, the
/// server log and the command's output and rejects file finds none. The WAL scan is shown to work
/// by a control marker written through an ordinary insert.
@Suite(.serialized, .timeLimit(.minutes(20))) struct AccountImportSecretsTests {
    /// The WAL segment files from `startSegment` to the current one, concatenated.
    static func walSince(_ startSegment: String, database: TestDatabase) async throws -> (bytes: Data, files: Int) {
        let directory: String = try await database.scalar("SHOW data_directory")
        let current: String = try await database.scalar("SELECT pg_walfile_name(pg_current_wal_insert_lsn())")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory + "/pg_wal")
            .filter { $0.count == 24 && $0 >= startSegment && $0 <= current }.sorted()
        var bytes = Data()
        for name in names { bytes += try Data(contentsOf: URL(fileURLWithPath: directory + "/pg_wal/" + name)) }
        return (bytes, names.count)
    }

    @Test func noImportedTokenReachesStagingTablesWALLogsOrOutput() async throws {
        let world = try await SIWAWorld.create()
        let start: String = try await world.database.scalar("SELECT pg_walfile_name(pg_current_wal_insert_lsn())")
        let accounts = ImportAccount.make(200)
        let path = try world.write(ImportAccount.csv(accounts), name: "accounts.csv")

        // In process, to see the staging table inside the transaction.
        let staging = SeenText()
        var importer = AccountImporter(pool: world.database.pool, keyring: try world.keyring)
        importer.inspectStaging = { tx in
            let rows = try await tx.query("SELECT t::text AS row FROM account_import t")
            let text = try rows.map { try $0.decode("row", as: String.self) }.joined(separator: "\n")
            staging.text.withLock { $0 = text }
        }
        let report = try await importer.run(path: path, teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID,
                                            rejectsPath: nil, createdBy: "test")
        #expect(report.applied && report.inserted == 200 && report.tokensSealed == 200)
        let staged = staging.text.withLock { $0 }
        #expect(staged.split(separator: "\n").count == 200, "the staging table was seen")
        #expect(staged.contains("hmac:") && !staged.contains(ImportAccount.tokenMarker), "staging holds ciphertext and fingerprints only")

        // Through the binary: a refused file and a --rejects run, both with tokens in bad rows.
        let more = ImportAccount.make(50, prefix: "second")
        var lines = [ImportAccount.header] + more.map(\.csvLine)
        lines[10] = "bad,,\(more[9].token),,"
        let second = try world.write(lines.joined(separator: "\n") + "\n", name: "second.csv")
        let refused = try await world.run(["accounts", "import", second])
        let rejects = world.directory.appendingPathComponent("rejects.csv").path
        let loaded = try await world.run(["accounts", "import", second, "--rejects", rejects, "--json"])
        #expect(refused.status == 65 && loaded.status == 1, "\(refused.stderr) \(loaded.stderr)")
        var output = refused.stdout + refused.stderr + loaded.stdout + loaded.stderr
        output += try String(contentsOfFile: rejects, encoding: .utf8)
        #expect(!output.contains(ImportAccount.tokenMarker), "output and rejects file: \(output.prefix(2000))")

        // Every table and view.
        let tables = try await world.dumpSchema()
        #expect(tables.contains(accounts[0].sub), "the dump holds the imported accounts")
        #expect(!tables.contains(ImportAccount.tokenMarker))

        // The WAL since the first import, with a control marker that must be found.
        let control = "control-marker-\(UUID().uuidString)"
        try await world.database.pool.execute("INSERT INTO siwa.audit_log (actor, action) VALUES (\(control), 'test.control')")
        let wal = try await Self.walSince(start, database: world.database)
        #expect(wal.files >= 1)
        #expect(wal.bytes.range(of: Data(control.utf8)) != nil, "the WAL scan sees what was written")
        #expect(wal.bytes.range(of: Data(accounts[0].sub.utf8)) != nil, "the WAL holds the imported rows")
        #expect(wal.bytes.range(of: Data(ImportAccount.tokenMarker.utf8)) == nil, "no imported token in the WAL")

        // The server log (scripts/pg-up.sh writes it beside the data directory).
        let directory: String = try await world.database.scalar("SHOW data_directory")
        let log = URL(fileURLWithPath: directory).deletingLastPathComponent().appendingPathComponent("server.log")
        if let text = try? Data(contentsOf: log) {
            #expect(text.range(of: Data(ImportAccount.tokenMarker.utf8)) == nil, "no imported token in \(log.path)")
        }
        await world.tearDown()
    }
}

/// Text a `@Sendable` seam saw, read afterwards by the test.
final class SeenText: Sendable {
    let text = Mutex("")
}
