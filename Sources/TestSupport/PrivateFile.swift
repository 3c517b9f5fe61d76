import Foundation

/// Test key files as an operator keeps them: mode 0600, since `work` refuses key files that group
/// or others may access (`SIWAConfiguration.checkKeyFilePermissions`).
public enum PrivateFile {
    /// Writes `text` to `path` (replacing it) and sets mode 0600.
    /// - Throws: `CocoaError` when the file cannot be written.
    public static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}
