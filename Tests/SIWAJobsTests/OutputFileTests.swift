import Foundation
import Testing
@testable import SIWAJobs

/// `OutputFile`: an export's `--out` appears whole or not at all, mode 0600, and never replaces
/// what is not a regular file.
@Suite struct OutputFileTests {
    private func directory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("output-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    private func names(_ dir: URL) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() }

    /// A directory holding `name` with "old" in it, and an `OutputFile` replacing it that has
    /// `written` so far; the directory is removed after `body`.
    private func replacing(_ name: String, written: String, _ body: (URL, String, OutputFile) throws -> Void) throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent(name).path
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: path))
        let file = try OutputFile(path: path, replacing: true)
        try file.handle.write(contentsOf: Data(written.utf8))
        try body(dir, path, file)
    }

    @Test func aPublishedFileIsWholeAndPrivateAndTheOldOneStaysUntilThen() throws {
        try replacing("results.csv", written: "new\n") { dir, path, file in
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "old\n", "replaced only once published")
            try file.publish()
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "new\n")
            #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
            #expect(try names(dir) == ["results.csv"], "no partial file left")
        }
    }

    @Test func aDiscardedFileLeavesThePathAsItWas() throws {
        try replacing("kept.csv", written: "half") { dir, path, file in
            file.discard()
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "old\n")
            let fresh = try OutputFile(path: dir.appendingPathComponent("never.csv").path, replacing: false)
            fresh.discard()
            #expect(try names(dir) == ["kept.csv"])
        }
    }

    @Test func withoutReplacingAnExistingPathIsRefusedAtPublish() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("accounts.csv").path
        let file = try OutputFile(path: path, replacing: false)
        try file.handle.write(contentsOf: Data("mine\n".utf8))
        try Data("theirs\n".utf8).write(to: URL(fileURLWithPath: path))   // another run got there first
        let failure = #expect(throws: OutputFile.Failure.self) { try file.publish() }
        #expect(failure?.code == EEXIST)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "theirs\n")
        #expect(try names(dir) == ["accounts.csv"])
    }

    /// A device (or FIFO, or link) is written as a stream: renaming over it would replace the node.
    @Test func aPathThatIsNotARegularFileIsWrittenDirectly() throws {
        let file = try OutputFile(path: "/dev/null", replacing: true)
        #expect(file.partial == nil)
        try file.handle.write(contentsOf: Data("gone\n".utf8))
        try file.publish()
        let type = try FileManager.default.attributesOfItem(atPath: "/dev/null")[.type] as? FileAttributeType
        #expect(type == .typeCharacterSpecial)
    }
}
