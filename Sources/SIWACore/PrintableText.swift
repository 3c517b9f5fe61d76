/// Values from a command line, the environment or a file, as messages quote them: control
/// characters escaped (a newline or an escape sequence never reaches a terminal or a log raw) and
/// at most `limit` characters, so a pasted megabyte is one short line.
public enum PrintableText {
    /// The first `limit` Unicode scalars of `text`, each control or format character written as
    /// its Swift escape (`\n`, `\u{1B}`, `\u{202E}`).
    public static func escapedPrefix(_ text: String, limit: Int = 60) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            // Control characters, and format characters too (a right-to-left override, a zero-width
            // space, a byte-order mark), which reorder or hide what a terminal shows.
            let category = scalar.properties.generalCategory
            out += category == .control || category == .format ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return out
    }

    /// `... (N characters)` when `text` is longer than `limit` scalars, else empty.
    public static func lengthNote(_ text: String, limit: Int = 60) -> String {
        let count = text.unicodeScalars.count
        return count > limit ? "... (\(count) characters)" : ""
    }

    /// A file path for a message: in single quotes, control characters escaped, cut at 256
    /// characters with its length noted (`'/tmp/a\nb'`, `'/very/long...' (1005 characters)`).
    public static func quotedPath(_ path: String) -> String {
        "'\(escapedPrefix(path, limit: 256))'\(lengthNote(path, limit: 256))"
    }
}
