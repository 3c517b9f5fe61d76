/// JSON text built by hand for small, flat shapes (RFC 8259), where going through
/// `JSONSerialization` for every item would cost more than the work itself: result details,
/// audit details, the sandbox's answers.
public enum JSONText {
    /// `s` as a JSON string literal, with quotes: `"`, `\` and control characters escaped
    /// (RFC 8259 §7), everything else as is.
    public static func quote(_ s: String) -> String {
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
        var out = "{"
        var first = true
        for key in fields.keys.sorted() {
            guard let value = fields[key] ?? nil else { continue }
            if !first { out += "," }
            first = false
            out += quote(key) + ":" + quote(value)
        }
        return out + "}"
    }
}
