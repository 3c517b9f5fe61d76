import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// A database migrated by the previous release (commit 655b139, which embedded sql/ as checked-in
/// Swift copies) must migrate as a no-op: same names, same checksums, nothing applied again.
@Suite(.serialized, .timeLimit(.minutes(20))) struct PreviousReleaseMigrationTests {
    static let release = "655b139"

    /// The checksums 655b139 recorded in `siwa.schema_migrations`, by name.
    static let recordedChecksums: KeyValuePairs<String, String> = [
        "0001_core.sql": "a9fd64d3638467820fefb6594458ed26eaca40637160bb83dd551db9e53e9b4b",
        "0002_views.sql": "f0d715d46d62d162de2e0afcdb2a38596e3a2a8df85202bfb50b360e72351833",
        "0003_roles.sql": "ef9f658941fc98bf3c25571a695ca6e6f4453d4eb490332b4ca5b039b4603b8f",
        "0004_transfer.sql": "163e3911d8e5e51df805f95dcf29793058b3575b341f77a0abafaf597e694c02",
        "0005_notifications.sql": "26c75c610b394407ef6fa799410f07d78b29787965cecc1203147171b1b2e68f",
        "0006_notification_fixes.sql": "5f71f6209202e778cdda59fb5d30018957fb82cbd138f0db885b2f70e1f8fa9f",
        "0007_transfer_lookup_order.sql": "0ff2c7006e28d340e6eefc60131f8a7da33a4b6d6d14480dce94c3a1f250144e",
        "0008_transfer_completion_hold.sql": "7aca2894cd6ab02314e6e26c8a2a6cde0953b1cc6a3dc3564fc9f4fce1bfd27a",
    ]

    @Test func aDatabaseMigratedByThePreviousReleaseMigratesAsANoOp() async throws {
        let db = try await TestDatabase.create(migrated: false)
        // Migrate as 655b139 did: its record table, then each embedded text in its own
        // transaction, recorded with the SHA-256 PostgreSQL computes of it.
        try await db.pool.withConnection { conn in
            try await conn.simpleQuery(unsafeSQL: """
                CREATE SCHEMA IF NOT EXISTS siwa;
                CREATE TABLE IF NOT EXISTS siwa.schema_migrations (
                    name       text PRIMARY KEY,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                """)
            for (name, expected) in Self.recordedChecksums {
                let text = try Self.embeddedText(of: name)
                try await conn.transaction { tx in
                    try await tx.simpleQuery(unsafeSQL: text)
                    let rows = try await tx.query("""
                        INSERT INTO siwa.schema_migrations (name, checksum)
                        VALUES (\(name), encode(sha256(convert_to(\(text), 'UTF8')), 'hex')) RETURNING checksum
                        """)
                    let recorded: String? = try rows.first?.decode("checksum")
                    #expect(recorded == expected, "\(name): the text read from git is not what \(Self.release) shipped")
                }
            }
        }
        // Migrations added since that release apply; the release's own are a no-op.
        let recorded = Set(Self.recordedChecksums.map(\.key))
        let added = Migrator().migrations.map(\.name).filter { !recorded.contains($0) }
        let run = try await BinaryProcess.run(["migrate"], environment: db.environment)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdout.contains("migrations: \(added.count) applied, \(Self.recordedChecksums.count) already applied"), "\(run.stdout)")
        for name in recorded { #expect(!run.stdout.contains("applied \(name)"), "\(name) applied again") }
        let rows = try await db.pool.query("SELECT name, checksum FROM siwa.schema_migrations ORDER BY name")
        let after = try rows.map { "\(try $0.decode("name", as: String.self))=\(try $0.decode("checksum", as: String.self))" }
        #expect(Array(after.prefix(Self.recordedChecksums.count)) == Self.recordedChecksums.map { "\($0.key)=\($0.value)" })
        #expect(after.count == Self.recordedChecksums.count + added.count)
        #expect(after.dropFirst(Self.recordedChecksums.count).map { String($0.prefix { $0 != "=" }) } == added)
        let status = try await db.pool.withConnection { conn in try await Migrator().status(on: conn) }
        #expect(status == Migrator.Status())
        await db.drop()
    }

    /// The SQL text 655b139 embedded for `name`: its checked-in Swift file, read from git, is a
    /// raw multi-line literal whose lines are indented by 8 spaces (empty lines stay empty).
    static func embeddedText(of name: String) throws -> String {
        let path = "Sources/SIWAJobs/Migrations/Embedded/Migration_\(name.dropLast(4)).swift"
        let source = try git(["show", "\(release):\(path)"])
        let lines = source.components(separatedBy: "\n")
        guard let open = lines.firstIndex(where: { $0.hasSuffix("####\"\"\"") }),
              let close = lines.lastIndex(of: "        \"\"\"####)"), open < close else {
            throw TestFailure("\(path) at \(release) holds no embedded migration literal")
        }
        return lines[(open + 1)..<close].map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : "" }
            .joined(separator: "\n")
    }

    static func git(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git", "-C", repositoryRoot.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("git \(arguments.joined(separator: " ")) failed: the test needs the repository's history")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
