/// Shape rules for Apple identifiers that every entry point applies alike (flags, settings, files).
public enum AppleIdentifier {
    /// The most bytes a client ID may have.
    public static let maxClientIDBytes = 255

    /// True for a client ID's shape (an App ID or Services ID, e.g. `com.example.app`): printable
    /// ASCII without spaces, 1 to `maxClientIDBytes` bytes. Apple's documentation names bundle IDs
    /// and Services IDs in reverse-DNS form; this refuses only what no such ID can hold.
    public static func isClientID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxClientIDBytes && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
