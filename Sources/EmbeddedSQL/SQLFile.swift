/// One file of the package's `sql/` folder, compiled into the binary by the EmbedSQL build-tool
/// plugin (`Plugins/EmbedSQL`): `SQLFile.all` and one constant per file (`SQLFile.m0001_core`
/// for `sql/0001_core.sql`) are generated at build time, so no copy of the SQL is checked in.
///
/// This module only stores the files. Which module owns which file, and in which order they are
/// applied, is declared by the migration groups (`QueueSchema.migrations` in Queue,
/// `SIWASchema.migrations` in SIWAJobs).
public struct SQLFile: Sendable, Equatable {
    /// The file name, e.g. `0001_core.sql`.
    public let name: String
    /// The file's text, byte for byte (UTF-8), including its final newline.
    public let text: String

    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }

    /// The text a migration runs and checksums: the file without its final newline. The first
    /// releases embedded each file as a Swift multi-line literal, which drops that newline, and the
    /// checksums recorded in every database they migrated cover exactly this text.
    public var migrationText: String {
        text.utf8.last == UInt8(ascii: "\n") ? String(decoding: text.utf8.dropLast(), as: UTF8.self) : text
    }

    /// The embedded file called `name`, if sql/ held one at build time.
    public static func named(_ name: String) -> SQLFile? {
        all.first { $0.name == name }
    }
}
