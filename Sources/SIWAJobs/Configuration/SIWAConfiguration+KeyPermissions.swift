import Foundation
import SIWACore

/// Key files (the `.p8` keys and the token encryption key) must be private to their owner: any
/// group or other permission bit (`mode & 0o077`) is refused when a key is loaded, unless
/// `SIWA_ALLOW_INSECURE_KEY_PERMISSIONS=1` (what `work --allow-insecure-key-permissions` sets);
/// `doctor` loads them anyway and warns (`insecureKeyFileWarnings()`).
extension SIWAConfiguration {
    /// The variable that lets key files with group or other permission bits load.
    public static let allowInsecureKeyPermissionsVariable = "SIWA_ALLOW_INSECURE_KEY_PERMISSIONS"

    /// True when `SIWA_ALLOW_INSECURE_KEY_PERMISSIONS` is `1`, `true` or `yes`.
    public var allowsInsecureKeyPermissions: Bool {
        ["1", "true", "yes"].contains(value(Self.allowInsecureKeyPermissionsVariable)?.lowercased() ?? "")
    }

    /// This configuration with key files of any mode allowed (a flag's override, or `doctor`).
    public func allowingInsecureKeyPermissions() -> SIWAConfiguration {
        setting(Self.allowInsecureKeyPermissionsVariable, to: "1")
    }

    /// Refuses the key file at `path` when group or others have any permission on it.
    /// - Parameters:
    ///   - what: how messages name the file, e.g. `key file`, `SIWA_TEAMS_FILE teams[0].key_file`.
    ///   - setting: the variable or flag, for `ConfigurationError.setting`.
    /// - Throws: `ConfigurationError` giving the mode and both ways out (chmod, or the override).
    func checkKeyFilePermissions(_ path: String, what: String, setting: String?) throws(ConfigurationError) {
        guard !allowsInsecureKeyPermissions, let mode = Self.insecureMode(of: path) else { return }
        throw ConfigurationError("\(what) \(PrintableText.quotedPath(path)) \(Self.describe(mode)): chmod 600 it (or pass "
            + "--allow-insecure-key-permissions / set \(Self.allowInsecureKeyPermissionsVariable)=1)", setting: setting)
    }

    /// One line per configured key file that group or others may access: `SIWA_KEY_FILE`,
    /// `SIWA_TOKEN_KEY_FILE` and the teams file's `key_file`s (and the teams file itself is not a
    /// secret, so it is not checked). Unreadable files are left to the other checks.
    public func insecureKeyFileWarnings() -> [String] {
        var files: [(what: String, path: String)] = []
        if let path = value("SIWA_KEY_FILE") { files.append(("SIWA_KEY_FILE", path)) }
        if let path = value("SIWA_TOKEN_KEY_FILE") { files.append(("SIWA_TOKEN_KEY_FILE", path)) }
        if let teams = teamsFilePath, let entries = try? Self.decodeTeamsFile(teams) {
            let base = URL(fileURLWithPath: teams).deletingLastPathComponent()
            for (index, entry) in entries.enumerated() {
                let path = entry.key_file.hasPrefix("/") ? entry.key_file : base.appendingPathComponent(entry.key_file).path
                files.append(("SIWA_TEAMS_FILE teams[\(index)].key_file", path))
            }
        }
        return files.compactMap { file in
            Self.insecureMode(of: file.path).map { "\(file.what) '\(file.path)' \(Self.describe($0)): chmod 600 it "
                + "(work refuses it unless --allow-insecure-key-permissions)" }
        }
    }

    /// The permission bits of `path` when group or others have any (`mode & 0o077 != 0`); nil for
    /// a private file, standard input (`-`), anything but a regular file, or a file that cannot be
    /// examined.
    static func insecureMode(of path: String) -> mode_t? {
        guard path != "-" else { return nil }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }   // a directory: the read says so
        let mode = info.st_mode & 0o777
        return mode & 0o077 != 0 ? mode : nil
    }

    private static func describe(_ mode: mode_t) -> String {
        "has mode 0\(String(mode, radix: 8)), so group or others may access it"
    }
}
