import Foundation
import Postgres
import Testing
@testable import SIWAJobs

@Suite(.serialized) struct MigrationTests {
    @Test func migrateTwiceIsANoOpTheSecondTime() async throws {
        let db = try await TestDatabase.create(migrated: false)
        let first = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(first.stdout.contains("migrations: \(Migration.embedded.count) applied, 0 already applied"))
        let second = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(second.status == 0)
        #expect(second.stdout.contains("migrations: 0 applied, \(Migration.embedded.count) already applied"))
        let recorded: Int = try await db.scalar("SELECT count(*)::int FROM siwa.schema_migrations")
        #expect(recorded == Migration.embedded.count)
        await db.drop()
    }

    @Test func refusesAnAppliedMigrationThatChanged() async throws {
        let db = try await TestDatabase.create(migrated: true)
        var changed = Migration.embedded
        changed[0] = Migration(name: changed[0].name, sql: changed[0].sql + "\n-- edited after it was applied\n")
        await #expect(throws: MigrationError.self) {
            _ = try await db.pool.withConnection { conn in try await Migrator(migrations: changed).migrate(on: conn) }
        }
        // The binary refuses too when the recorded checksum no longer matches its embedded file.
        try await db.pool.withConnection { conn in
            try await conn.execute("UPDATE siwa.schema_migrations SET checksum = 'not-the-file' WHERE name = '0002_views.sql'")
        }
        let run = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(run.status == 65)
        #expect(run.stderr.contains("0002_views.sql"))
        #expect(run.stderr.contains("must never change"))
        await db.drop()
    }

    @Test func embeddedMigrationsMatchTheSQLFolder() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files == Migration.embedded.map(\.name), "run scripts/embed-sql.sh")
        for migration in Migration.embedded {
            let text = try String(contentsOf: folder.appendingPathComponent(migration.name), encoding: .utf8)
            #expect(text.trimmingCharacters(in: .newlines) == migration.sql.trimmingCharacters(in: .newlines),
                    "\(migration.name) differs from its embedded copy: run scripts/embed-sql.sh")
        }
    }
}
