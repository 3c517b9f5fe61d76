import Foundation

/// An element type whose Swift arrays are sent as one PostgreSQL value: a one-dimensional array
/// literal such as `{"a","b",NULL}` (https://www.postgresql.org/docs/15/arrays.html#ARRAYS-IO),
/// except `[UInt8]`, which is sent as `bytea` in hex format (`\x0102ff`).
public protocol PostgresArrayElementEncodable: Sendable {
    static func postgresText(forArray elements: [Self]) -> String
}

extension PostgresArrayElementEncodable where Self: PostgresEncodable {
    public static func postgresText(forArray elements: [Self]) -> String {
        PostgresArrayLiteral.encode(elements.map(\.postgresText))
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElementEncodable {
    public var postgresText: String? { Element.postgresText(forArray: self) }
}

extension String: PostgresArrayElementEncodable {
    public static func postgresText(forArray elements: [String]) -> String {
        PostgresArrayLiteral.encode(strings: elements.lazy.map(Optional.some), count: elements.count)
    }
}
extension Int: PostgresArrayElementEncodable {
    public static func postgresText(forArray elements: [Int]) -> String { PostgresArrayLiteral.encode(integers: elements) }
}
extension Int64: PostgresArrayElementEncodable {
    public static func postgresText(forArray elements: [Int64]) -> String { PostgresArrayLiteral.encode(integers: elements) }
}
extension Int32: PostgresArrayElementEncodable {
    public static func postgresText(forArray elements: [Int32]) -> String { PostgresArrayLiteral.encode(integers: elements) }
}
extension Int16: PostgresArrayElementEncodable {}
extension Double: PostgresArrayElementEncodable {}
extension Bool: PostgresArrayElementEncodable {}
extension Date: PostgresArrayElementEncodable {}
extension UUID: PostgresArrayElementEncodable {}
extension Optional: PostgresArrayElementEncodable where Wrapped: PostgresArrayElementEncodable & PostgresEncodable {
    /// `[String?]` (the completion's text columns) is written straight from its strings; other
    /// element types go through their `postgresText`.
    public static func postgresText(forArray elements: [Wrapped?]) -> String {
        if Wrapped.self == String.self {
            let strings = unsafeBitCast(elements, to: [String?].self)
            return PostgresArrayLiteral.encode(strings: strings, count: strings.count)
        }
        return PostgresArrayLiteral.encode(elements.map(\.postgresText))
    }
}

extension UInt8: PostgresArrayElementEncodable {
    /// `[UInt8]` is `bytea`: `\x` followed by two lower-case hex digits per byte.
    public static func postgresText(forArray elements: [UInt8]) -> String {
        PostgresBytea.encode(elements)
    }
}

/// Writes and reads one-dimensional PostgreSQL array literals.
enum PostgresArrayLiteral {
    /// `{e1,e2,...}`; an element is double-quoted (with `"` and `\` backslash-escaped) when it is
    /// empty, spells NULL, or contains a delimiter, brace, quote, backslash or whitespace.
    static func encode(_ elements: [String?]) -> String {
        encode(strings: elements, count: elements.count)
    }

    /// `encode(_:)` over any sequence of `count` optional strings, each element's bytes copied
    /// in runs (between the quotes and backslashes that need escaping), into a buffer reserved
    /// for the whole literal up front.
    static func encode(strings elements: some Sequence<String?>, count: Int) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(2 + count * 8)
        output.append(UInt8(ascii: "{"))
        var first = true
        for element in elements {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            guard var element else {
                output.append(contentsOf: "NULL".utf8)
                continue
            }
            element.withUTF8 { appendElement($0, to: &output) }
        }
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }

    /// One element's bytes, double-quoted with `"` and `\` escaped when `needsQuotes`.
    private static func appendElement(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        guard needsQuotes(bytes) else {
            output.append(contentsOf: bytes)
            return
        }
        output.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<bytes.count where bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "\\") {
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            output.append(UInt8(ascii: "\\"))
            runStart = index   // the escaped byte starts the next run
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        output.append(UInt8(ascii: "\""))
    }

    /// `{1,-2,3}`: integers written as decimal digits straight into the literal, without a
    /// string per element (the completion's arrays hold thousands).
    static func encode<T: FixedWidthInteger>(integers elements: [T]) -> String {
        var output: [UInt8] = [UInt8(ascii: "{")]
        output.reserveCapacity(2 + elements.count * 8)
        var digits: [UInt8] = []
        digits.reserveCapacity(20)
        for (index, element) in elements.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            if element < 0 { output.append(UInt8(ascii: "-")) }
            // The magnitude as an unsigned value: T.min has no positive counterpart in T.
            var rest = element.magnitude
            digits.removeAll(keepingCapacity: true)
            repeat {
                digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
                rest /= 10
            } while rest > 0
            output.append(contentsOf: digits.reversed())
        }
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }

    /// True when an element must be quoted: it is empty, spells NULL in any case, or holds a
    /// delimiter, brace, quote, backslash or whitespace.
    private static func needsQuotes(_ element: UnsafeBufferPointer<UInt8>) -> Bool {
        if element.isEmpty { return true }
        if element.count == 4, (element[0] | 0x20) == UInt8(ascii: "n"), (element[1] | 0x20) == UInt8(ascii: "u"),
           (element[2] | 0x20) == UInt8(ascii: "l"), (element[3] | 0x20) == UInt8(ascii: "l") { return true }
        for byte in element {
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ","), UInt8(ascii: "\""),
                 UInt8(ascii: "\\"), UInt8(ascii: " "), 0x09...0x0D:
                return true
            default:
                continue
            }
        }
        return false
    }

    /// Parses array output such as `{a,"b c",NULL}` (optionally prefixed by bounds like
    /// `[0:1]=`) into its elements; nil elements are SQL NULLs. Only one dimension is supported.
    static func decode(_ text: String) throws(DatabaseError) -> [String?] {
        var bytes = Array(text.utf8)[...]
        if bytes.first == UInt8(ascii: "[") {
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { throw malformed() }
            bytes = bytes[(equals + 1)...]
        }
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { throw malformed() }
        bytes = bytes.dropFirst().dropLast()
        if bytes.allSatisfy(isSpace) { return [] }
        var elements: [String?] = []
        var current: [UInt8] = []
        var quoted = false, inQuotes = false, escaping = false, afterQuote = false
        for byte in bytes {
            if escaping {
                current.append(byte)
                escaping = false
            } else if byte == UInt8(ascii: "\\") {
                escaping = true
            } else if inQuotes {
                if byte == UInt8(ascii: "\"") { inQuotes = false; afterQuote = true } else { current.append(byte) }
            } else if byte == UInt8(ascii: "\"") {
                guard !afterQuote, current.allSatisfy(isSpace) else { throw malformed() }
                current.removeAll(keepingCapacity: true)
                quoted = true
                inQuotes = true
            } else if byte == UInt8(ascii: ",") {
                elements.append(finish(current, quoted: quoted))
                current.removeAll(keepingCapacity: true)
                quoted = false
                afterQuote = false
            } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}") {
                throw DatabaseError.decoding("multi-dimensional arrays are not supported")
            } else if afterQuote {
                guard isSpace(byte) else { throw malformed() }
            } else {
                current.append(byte)
            }
        }
        guard !inQuotes, !escaping else { throw malformed() }
        elements.append(finish(current, quoted: quoted))
        return elements
    }

    private static func finish(_ bytes: [UInt8], quoted: Bool) -> String? {
        if quoted { return String(decoding: bytes, as: UTF8.self) }
        var slice = bytes[...]
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
        let value = String(decoding: slice, as: UTF8.self)
        return value.count == 4 && value.lowercased() == "null" ? nil : value
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || (0x09...0x0D).contains(byte)
    }

    private static func malformed() -> DatabaseError {
        DatabaseError.decoding("malformed array literal")
    }
}

/// `bytea` in hex format (https://www.postgresql.org/docs/15/datatype-binary.html).
enum PostgresBytea {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        output.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: String) throws(DatabaseError) -> [UInt8] {
        var text = text
        let decoded: [UInt8]?? = text.withUTF8 { bytes -> [UInt8]?? in
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0 else {
                return .none
            }
            let count = (bytes.count - 2) / 2
            var valid = true
            let output = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                for index in 0..<count {
                    guard let high = nibble(bytes[2 + 2 * index]), let low = nibble(bytes[3 + 2 * index]) else {
                        valid = false
                        break
                    }
                    buffer[index] = high << 4 | low
                    initialized = index + 1
                }
            }
            return .some(valid ? output : nil)
        }
        switch decoded {
        case .none: throw DatabaseError.decoding("bytea is not in hex format (set bytea_output = 'hex')")
        case .some(.none): throw DatabaseError.decoding("bytea contains a non-hex digit")
        case .some(.some(let output)): return output
        }
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
