import Foundation
import Testing
@testable import SIWAJobs

/// The hand-off file's destination: never a directory, never an existing file without --force.
@Suite(.timeLimit(.minutes(20))) struct TransferExportFileTests {
    @Test func aDirectoryIsRefusedAndLeftIntact() async throws {
        let db = try await TestDatabase.create()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let keep = dir.appendingPathComponent("keep.txt")
        try Data("precious".utf8).write(to: keep)
        let run = try await BinaryProcess.run(["transfer", "export-csv", "--job", "1", "--out", dir.path, "--force"],
                                              environment: db.environment)
        #expect(run.status != 0)
        #expect(run.stderr.contains("is a directory"))
        #expect(FileManager.default.fileExists(atPath: keep.path), "nothing inside the directory may be touched")
        try? FileManager.default.removeItem(at: dir)
        await db.drop()
    }

    /// Through the command: without --force an existing file is refused and kept; with --force
    /// the destination check passes (the run then stops at the unknown job, leaving the file,
    /// because the file is replaced only once the export has something to write).
    @Test func anExistingFileNeedsForce() async throws {
        let db = try await TestDatabase.create()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-out-\(UUID().uuidString).csv")
        try Data("old".utf8).write(to: file)
        let refused = try await BinaryProcess.run(["transfer", "export-csv", "--job", "1", "--out", file.path], environment: db.environment)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("exists: pass --force to replace it"), "\(refused.stderr)")
        #expect(try String(contentsOf: file, encoding: .utf8) == "old")
        let forced = try await BinaryProcess.run(["transfer", "export-csv", "--job", "1", "--out", file.path, "--force"], environment: db.environment)
        #expect(forced.status != 0)
        #expect(!forced.stderr.contains("--force"), "with --force the file check passes: \(forced.stderr)")
        #expect(forced.stderr.contains("job 1"), "\(forced.stderr)")
        #expect(try String(contentsOf: file, encoding: .utf8) == "old")
        try? FileManager.default.removeItem(at: file)
        await db.drop()
    }
}
