import EmbeddedSQL
import Foundation
import Postgres
import Queue
import Testing
@testable import SIWAJobs

/// The repository root (tests read sql/ and git history from it).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite(.serialized, .timeLimit(.minutes(20))) struct MigrationTests {
    @Test func migrateTwiceIsANoOpTheSecondTime() async throws {
        let db = try await TestDatabase.create(migrated: false)
        let count = Migrator().migrations.count
        let first = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(first.stdout.contains("migrations: \(count) applied, 0 already applied"))
        let second = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(second.status == 0)
        #expect(second.stdout.contains("migrations: 0 applied, \(count) already applied"))
        let recorded: Int = try await db.scalar("SELECT count(*)::int FROM siwa.schema_migrations")
        #expect(recorded == count)
        await db.drop()
    }

    @Test func refusesAnAppliedMigrationThatChanged() async throws {
        let db = try await TestDatabase.create(migrated: true)
        let shipped = Migrator()
        var queue = shipped.groups[0].migrations
        queue[0] = Migration(name: queue[0].name, sql: queue[0].sql + "\n-- edited after it was applied\n")
        let changed = Migrator(groups: [MigrationGroup(name: "queue", migrations: queue)] + shipped.groups.dropFirst(),
                               schema: shipped.schema, lockKey: shipped.lockKey)
        await #expect(throws: MigrationError.self) {
            _ = try await db.pool.withConnection { conn in try await changed.migrate(on: conn) }
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

    @Test func aMigrationListedByTwoGroupsIsRefusedBeforeAnythingRuns() async throws {
        let db = try await TestDatabase.create(migrated: false)
        let twice = Migrator(groups: [QueueSchema.migrations, QueueSchema.migrations], schema: "siwa", lockKey: 1)
        await #expect(throws: MigrationError.self) {
            _ = try await db.pool.withConnection { conn in try await twice.migrate(on: conn) }
        }
        let present: Bool = try await db.scalar("SELECT to_regclass('siwa.jobs') IS NOT NULL")
        #expect(!present)
        await db.drop()
    }

    /// The build-time embedding (Plugins/EmbedSQL) replaces the checked-in copies: what the binary
    /// carries is sql/, byte for byte, every file of it, in file-name order.
    @Test func embeddedFilesAreTheSQLFolderByteForByte() throws {
        let folder = repositoryRoot.appendingPathComponent("sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(!files.isEmpty, "no .sql files in \(folder.path)")
        #expect(SQLFile.all.map(\.name) == files)
        for file in SQLFile.all {
            let bytes = try Data(contentsOf: folder.appendingPathComponent(file.name))
            #expect(Data(file.text.utf8) == bytes, "\(file.name) differs from its embedded text")
            // What runs and is checksummed: the file without its final newline (see SQLFile.migrationText).
            #expect(Data(file.migrationText.utf8) + Data("\n".utf8) == bytes)
        }
    }

    /// Each file of sql/ belongs to exactly one group; the queue's group applies first, and the
    /// overall order is the file-name order the first releases applied.
    @Test func everyFileBelongsToExactlyOneGroupInFileOrder() {
        let migrator = Migrator()
        #expect(migrator.groups.map(\.name) == ["queue", "siwa"])
        #expect(migrator.groups[0].migrations.map(\.name) == ["0001_core.sql"])
        #expect(migrator.migrations.map(\.name) == SQLFile.all.map(\.name))
        #expect(migrator.migrations.map(\.sql) == SQLFile.all.map(\.migrationText))
        #expect(migrator.schema == "siwa")
    }
}
