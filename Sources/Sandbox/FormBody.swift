/// An `application/x-www-form-urlencoded` body (WHATWG URL §5), parsed strictly as Apple does:
/// duplicate parameters, bad percent escapes, raw spaces/control/non-ASCII bytes and invalid UTF-8 are errors
/// (TN3107 lists these under `invalid_request`).
///
/// Parsed on every Apple request, so without intermediate arrays: the body is scanned once, a name
/// or value without `%` or `+` (all of a client's usual fields) becomes a `String` straight from its
/// bytes, and the fields are kept in order in a small array (a request has a handful; looking one up
/// by scanning is cheaper than hashing every name).
struct FormBody {
    enum Failure: Error, Equatable {
        case notPercentEncoded
        case duplicate(String)
        case badEscape
    }

    /// The fields in the order sent, names unique.
    private(set) var fields: [(name: String, value: String)] = []

    /// The value of the field `name` (exact, case-sensitive), or nil.
    subscript(_ name: String) -> String? {
        for field in fields where field.name == name { return field.value }
        return nil
    }

    /// True when a field's name is not in `allowed`.
    func hasName(outside allowed: Set<String>) -> Bool {
        fields.contains { !allowed.contains($0.name) }
    }

    /// Above this many fields, duplicates are found with a set instead of by scanning.
    private static let scanLimit = 16

    /// - Parameter body: the raw body.
    /// - Throws: `Failure` for a byte outside `!`...`~` (raw space, control, non-ASCII), a bad
    ///   percent escape or decoded text that is not UTF-8, or a name sent twice.
    init(_ body: [UInt8]) throws(Failure) {
        if body.isEmpty { return }
        var seen: Set<String>?
        try body.withUnsafeBufferPointer { (bytes: UnsafeBufferPointer<UInt8>) throws(Failure) in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") { end += 1 }
                if end > start {   // empty pairs ("a=1&&b=2") are skipped
                    var eq = start
                    while eq < end, bytes[eq] != UInt8(ascii: "=") { eq += 1 }
                    let name = try Self.decode(UnsafeBufferPointer(rebasing: bytes[start..<eq]))
                    let value = eq < end ? try Self.decode(UnsafeBufferPointer(rebasing: bytes[(eq + 1)..<end])) : ""
                    try add(name, value, seen: &seen)
                }
                start = end + 1
            }
        }
    }

    private mutating func add(_ name: String, _ value: String, seen: inout Set<String>?) throws(Failure) {
        if seen == nil, fields.count >= Self.scanLimit { seen = Set(fields.map(\.name)) }
        if seen != nil {
            if seen?.insert(name).inserted == false { throw .duplicate(name) }
        } else if fields.contains(where: { $0.name == name }) {
            throw .duplicate(name)
        }
        fields.append((name, value))
    }

    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> String {
        // Printable ASCII without escapes is its own decoding (and valid UTF-8).
        var plain = true
        for c in bytes {
            guard (0x21...0x7E).contains(c) else { throw .notPercentEncoded }
            if c == UInt8(ascii: "%") || c == UInt8(ascii: "+") { plain = false }
        }
        if plain { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "+"):
                out.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard i + 2 < bytes.count, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) else { throw .badEscape }
                out.append(hi << 4 | lo)
                i += 2
            default:
                out.append(c)
            }
            i += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw .badEscape }
        return text
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
