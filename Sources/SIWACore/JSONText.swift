/// JSON text built by hand for small, flat shapes (RFC 8259), where going through
/// `JSONSerialization` for every item would cost more than the work itself: result details,
/// audit details, the sandbox's answers.
public enum JSONText {
    /// `s` as a JSON string literal, with quotes: `"`, `\` and control characters escaped
    /// (RFC 8259 §7), everything else as is.
    public static func quote(_ s: String) -> String {
        // Most text (fingerprints, codes, reasons) needs no escape: one scan of its bytes, one copy.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            var out = "\""
            out.reserveCapacity(s.utf8.count + 2)
            out += s
            out += "\""
            return out
        }
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }

    /// A JSON object of string members, keys sorted, nil values left out: `{"a":"x","b":"y"}`.
    public static func object(_ fields: [String: String?]) -> String {
        members(fields.map { ($0.key, $0.value) })
    }

    /// `object(_:)` from a literal's pairs, without hashing them into a dictionary first (result
    /// and audit details are made for every item): the same text, keys sorted, nil values left
    /// out. A key given twice appears twice.
    public static func object(pairs fields: KeyValuePairs<String, String?>) -> String {
        members(fields.map { ($0.key, $0.value) })
    }

    private static func members(_ fields: [(key: String, value: String?)]) -> String {
        var out = "{"
        var first = true
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard let value else { continue }
            if !first { out += "," }
            first = false
            out += quote(key)
            out += ":"
            out += quote(value)
        }
        out += "}"
        return out
    }
}
