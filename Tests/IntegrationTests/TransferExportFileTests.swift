import Foundation
import Testing
@testable import SIWAJobs

/// The hand-off file's destination: never a directory, never an existing file without --force.
@Suite struct TransferExportFileTests {
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

    @Test func anExistingFileNeedsForce() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-out-\(UUID().uuidString).csv")
        try Data("old".utf8).write(to: file)
        #expect(throws: EnqueueError.self) { try TransferCSVExporter.checkDestination(file.path, overwrite: false) }
        #expect(throws: Never.self) { try TransferCSVExporter.checkDestination(file.path, overwrite: true) }
        try? FileManager.default.removeItem(at: file)
    }
}
