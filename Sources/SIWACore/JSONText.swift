/// JSON text built by hand for small, flat shapes (RFC 8259), where going through
/// `JSONSerialization` for every item would cost more than the work itself: result details,
/// audit details, the sandbox's answers.
public enum JSONText {
    /// `s` as a JSON string literal, with quotes: `"`, `\` and control characters escaped
    /// (RFC 8259 §7), everything else as is.
    public static func quote(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count + 2)
        appendQuoted(s, to: &out)
        return out
    }

    /// Appends `quote(s)` to `out` (no intermediate String).
    public static func appendQuoted(_ s: String, to out: inout String) {
        out += "\""
        // Most text (fingerprints, codes, reasons) needs no escape: one scan of its bytes, one copy.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out += s
            out += "\""
            return
        }
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
    }

    /// A JSON object of string members, keys sorted, nil values left out: `{"a":"x","b":"y"}`.
    public static func object(_ fields: [String: String?]) -> String {
        var out = "{"
        var first = true
        for key in fields.keys.sorted() {
            guard let value = fields[key] ?? nil else { continue }
            if !first { out += "," }
            first = false
            appendQuoted(key, to: &out)
            out += ":"
            appendQuoted(value, to: &out)
        }
        out += "}"
        return out
    }

    /// `object(_:)` from a literal's pairs, without hashing them into a dictionary or sorting
    /// them into new arrays (result and audit details are made for every item): the same text,
    /// keys sorted, nil values left out. A key given twice appears twice, in the given order.
    /// Meant for a handful of pairs (it picks the next key by a scan: quadratic in the count).
    public static func object(pairs fields: KeyValuePairs<String, String?>) -> String {
        var length = 2
        for (key, value) in fields { length += key.utf8.count + (value?.utf8.count ?? 0) + 6 }
        var out = ""
        out.reserveCapacity(length)
        out += "{"
        var first = true
        var previous: Int?   // index of the member written last
        for _ in 0..<fields.count {
            // The next member: the least (key, index) after the previous one.
            var next: Int?
            for index in fields.indices {
                if let previous, !precedes(fields[previous].key, previous, fields[index].key, index) { continue }
                if let candidate = next, !precedes(fields[index].key, index, fields[candidate].key, candidate) { continue }
                next = index
            }
            guard let next else { break }
            previous = next
            guard let value = fields[next].value else { continue }
            if !first { out += "," }
            first = false
            appendQuoted(fields[next].key, to: &out)
            out += ":"
            appendQuoted(value, to: &out)
        }
        out += "}"
        return out
    }

    /// Whether member (`a`, `i`) sorts before member (`b`, `j`): by key, then by position.
    private static func precedes(_ a: String, _ i: Int, _ b: String, _ j: Int) -> Bool {
        a < b || (a == b && i < j)
    }
}
