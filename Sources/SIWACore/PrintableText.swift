/// Values from a command line, the environment or a file, as messages quote them: control
/// characters escaped (a newline or an escape sequence never reaches a terminal or a log raw) and
/// at most `limit` characters, so a pasted megabyte is one short line.
public enum PrintableText {
    /// True for a control or format character: one that moves the cursor, starts an escape
    /// sequence, or (a right-to-left override, a zero-width space, a byte-order mark) reorders or
    /// hides what a terminal shows.
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        let category = scalar.properties.generalCategory
        return category == .control || category == .format
    }

    /// `text` whole, each hidden character (`isHidden`) written as its Swift escape (`\n`,
    /// `\u{1B}`, `\u{202E}`); with `keepingLineBreaks`, a line break and a tab stay as they are.
    public static func escaped(_ text: some StringProtocol, keepingLineBreaks: Bool = false) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            let kept = keepingLineBreaks && (scalar == "\n" || scalar == "\t")
            out += isHidden(scalar) && !kept ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return out
    }

    /// The first `limit` Unicode scalars of `text`, `escaped`.
    public static func escapedPrefix(_ text: String, limit: Int = 60) -> String {
        escaped(String(text.unicodeScalars.prefix(limit)))
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
