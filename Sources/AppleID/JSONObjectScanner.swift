/// A top-level member's value in one of Apple's JSON answers, as `JSONObjectScanner` keeps it.
public enum JSONMemberValue: Sendable, Equatable {
    /// A string, its escapes decoded.
    case string(String)
    /// A number, its text exactly as sent (checked against RFC 8259 §6; read by `LenientJSON`).
    case number(String)
    case bool(Bool)
    case null
    /// An object or an array: checked to be well-formed, not kept (no field read is nested).
    case nested
}

/// The top-level members of a JSON object, in arrival order. A key sent twice reads as its last
/// value (as `JSONSerialization`'s dictionary did).
public struct JSONObjectMembers: Sendable, Equatable {
    public var members: [(key: String, value: JSONMemberValue)] = []

    /// The value of `key` (its last occurrence), nil when absent. A linear search: Apple's answers
    /// hold a handful of members, fewer than a dictionary's hashing would pay for.
    public subscript(key: String) -> JSONMemberValue? {
        members.last { $0.key == key }?.value
    }

    public static func == (a: JSONObjectMembers, b: JSONObjectMembers) -> Bool {
        a.members.elementsEqual(b.members) { $0.key == $1.key && $0.value == $1.value }
    }
}

/// Why a body is not a JSON object: the byte offset where reading stopped and what was wrong
/// there. Never quotes the body (success bodies carry tokens).
public struct JSONScanError: Error, Equatable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict reader of the JSON object Apple answers with (RFC 8259), in place of Foundation's
/// `JSONSerialization` on every response: it keeps the top-level members only (strings decoded,
/// numbers as text) and checks nested objects and arrays without building them.
///
/// Strict: UTF-8 only (no byte order mark, no invalid sequences, no unpaired surrogate escapes),
/// the RFC's grammar exactly (no trailing commas, comments, single quotes, leading zeros, `NaN`),
/// whitespace only around the object, nesting at most `maxDepth` deep. Anything else throws
/// `JSONScanError`; no input can make it crash or read outside the body.
public enum JSONObjectScanner {
    /// The deepest nesting accepted (the top-level object is depth 1).
    static let maxDepth = 64

    /// The members of the JSON object that is the whole of `body`.
    /// - Throws: `JSONScanError` when `body` is not exactly one well-formed JSON object.
    public static func members(of body: [UInt8]) throws(JSONScanError) -> JSONObjectMembers {
        let result: Result<JSONObjectMembers, JSONScanError> = body.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer)
            do throws(JSONScanError) {
                reader.skipWhitespace()
                let members = try reader.topLevelObject()
                reader.skipWhitespace()
                guard reader.index == buffer.count else { throw reader.failure("text after the object") }
                return .success(members)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The cursor over the body's bytes. Every read checks `index` against the end first.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func failure(_ reason: String) -> JSONScanError { JSONScanError(offset: index, reason: reason) }

        var atEnd: Bool { index >= bytes.count }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        /// Consumes `byte` (after whitespace) or throws `expected`.
        mutating func expect(_ byte: UInt8, _ expected: String) throws(JSONScanError) {
            skipWhitespace()
            guard !atEnd, bytes[index] == byte else { throw failure(atEnd ? "unexpected end of input" : expected) }
            index += 1
        }

        mutating func topLevelObject() throws(JSONScanError) -> JSONObjectMembers {
            var members = JSONObjectMembers()
            try object(depth: 1) { key, value in members.members.append((key, value)) }
            return members
        }

        /// Reads an object, handing each member to `member` (top level) or dropping it (nested).
        mutating func object(depth: Int, member: ((String, JSONMemberValue) -> Void)?) throws(JSONScanError) {
            guard depth <= JSONObjectScanner.maxDepth else { throw failure("nested deeper than \(JSONObjectScanner.maxDepth)") }
            try expect(UInt8(ascii: "{"), "expected an object")
            skipWhitespace()
            if !atEnd, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                guard !atEnd, bytes[index] == UInt8(ascii: "\"") else { throw failure(atEnd ? "unexpected end of input" : "expected a member name") }
                let key = try string()
                try expect(UInt8(ascii: ":"), "expected ':' after a member name")
                let value = try value(depth: depth + 1)
                member?(key, value)
                skipWhitespace()
                guard !atEnd else { throw failure("unexpected end of input") }
                switch bytes[index] {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return
                default: throw failure("expected ',' or '}' in an object")
                }
            }
        }

        mutating func array(depth: Int) throws(JSONScanError) {
            guard depth <= JSONObjectScanner.maxDepth else { throw failure("nested deeper than \(JSONObjectScanner.maxDepth)") }
            try expect(UInt8(ascii: "["), "expected an array")
            skipWhitespace()
            if !atEnd, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                _ = try value(depth: depth + 1)
                skipWhitespace()
                guard !atEnd else { throw failure("unexpected end of input") }
                switch bytes[index] {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return
                default: throw failure("expected ',' or ']' in an array")
                }
            }
        }

        /// One value at `depth` (objects and arrays count one level more than their container).
        mutating func value(depth: Int) throws(JSONScanError) -> JSONMemberValue {
            skipWhitespace()
            guard !atEnd else { throw failure("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "{"): try object(depth: depth, member: nil); return .nested
            case UInt8(ascii: "["): try array(depth: depth); return .nested
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw failure("expected a value")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONScanError) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { throw failure("unexpected end of input") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw failure("expected a value") }
            index += count
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, returned as its text.
        mutating func number() throws(JSONScanError) -> String {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard !atEnd, isDigit(bytes[index]) else { throw failure("expected a digit") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if !atEnd, isDigit(bytes[index]) { throw failure("leading zero in a number") }
            } else {
                skipDigits()
            }
            if !atEnd, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard !atEnd, isDigit(bytes[index]) else { throw failure("expected a digit after '.'") }
                skipDigits()
            }
            if !atEnd, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if !atEnd, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard !atEnd, isDigit(bytes[index]) else { throw failure("expected a digit in an exponent") }
                skipDigits()
            }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        }

        mutating func skipDigits() {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        /// A string starting at its opening quote. A string without escapes (every token Apple
        /// sends) is validated and copied in one go; escapes are decoded byte by byte.
        mutating func string() throws(JSONScanError) -> String {
            index += 1   // the opening quote
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    guard let string = String(validating: text, as: UTF8.self) else { throw failure("invalid UTF-8 in a string") }
                    index += 1
                    return string
                }
                if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
                if byte < 0x20 { throw failure("control character in a string") }
                index += 1
            }
            throw failure("unterminated string")
        }

        /// The rest of a string that holds an escape; `start` is just after its opening quote.
        mutating func escapedString(from start: Int) throws(JSONScanError) -> String {
            var out: [UInt8] = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    guard let string = String(validating: out, as: UTF8.self) else { throw failure("invalid UTF-8 in a string") }
                    return string
                }
                if byte < 0x20 { throw failure("control character in a string") }
                guard byte == UInt8(ascii: "\\") else {
                    out.append(byte)
                    index += 1
                    continue
                }
                index += 1
                guard !atEnd else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &out)
                default: index -= 1; throw failure("invalid escape in a string")
                }
            }
            throw failure("unterminated string")
        }

        /// After `\u`: four hex digits, a surrogate pair's two escapes together, as UTF-8.
        mutating func appendUnicodeEscape(to out: inout [UInt8]) throws(JSONScanError) {
            let first = try hex4()
            var scalarValue = first
            if (0xD800...0xDBFF).contains(first) {
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw failure("unpaired surrogate in a string")
                }
                index += 2
                let second = try hex4()
                guard (0xDC00...0xDFFF).contains(second) else { throw failure("unpaired surrogate in a string") }
                scalarValue = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(first) {
                throw failure("unpaired surrogate in a string")
            }
            guard let scalar = Unicode.Scalar(scalarValue), let encoded = UTF8.encode(scalar) else {
                throw failure("invalid \\u escape")
            }
            out.append(contentsOf: encoded)
        }

        mutating func hex4() throws(JSONScanError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw failure("unexpected end of input") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw failure("invalid \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }
    }
}
