/// `application/x-www-form-urlencoded` bodies as Apple requires them (TN3107: "form data not
/// percent-encoded" gives `invalid_request`/`invalid_client`).
///
/// Encoding leaves only RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`) as-is and
/// percent-encodes every other UTF-8 byte, including space (as `%20`), `+`, `/`, `=` and `&`.
public enum FormEncoding {
    /// `name=value&name=value` in the given order, built in one buffer.
    public static func encode(_ fields: [(String, String)]) -> String {
        String(decoding: encodedBytes(fields), as: UTF8.self)
    }

    /// `encode(fields)` as UTF-8 bytes, the request body itself (no String in between).
    public static func encodedBytes(_ fields: [(String, String)]) -> [UInt8] {
        encodedBytes(fields, reservingExtra: 0)
    }

    /// `encodedBytes(fields)` in a buffer with room for `extra` more bytes (what the caller
    /// appends next), so appending them does not copy the body again.
    static func encodedBytes(_ fields: [(String, String)], reservingExtra extra: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 } + 32 + extra)
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            append(field.0, to: &out)
            out.append(UInt8(ascii: "="))
            append(field.1, to: &out)
        }
        return out
    }

    /// Percent-encodes one name or value.
    public static func percentEncode(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text` encoded. Text that needs no escape (a client_secret JWT, a refresh token:
    /// base64url and dots) is copied in one go.
    private static func append(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            if bytes.allSatisfy(isUnreserved) {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                if isUnreserved(byte) {
                    out.append(byte)
                } else {
                    out.append(UInt8(ascii: "%"))
                    out.append(hexDigit(byte >> 4))
                    out.append(hexDigit(byte & 0x0F))
                }
            }
        }
    }

    /// The upper-case hex digit of a nibble (0...15).
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    /// Parses a form body (`+` is a space, `%XX` a byte). Returns nil for a malformed escape or
    /// invalid UTF-8. Fields without `=` get an empty value.
    public static func decode(_ body: String) -> [(String, String)]? {
        var fields: [(String, String)] = []
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(parts[0]) else { return nil }
            let value = parts.count > 1 ? percentDecode(parts[1]) : ""
            guard let value else { return nil }
            fields.append((name, value))
        }
        return fields
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func percentDecode(_ text: Substring) -> String? {
        var out = [UInt8]()
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            switch byte {
            case UInt8(ascii: "+"):
                out.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard bytes.count >= 2, let hi = hexValue(bytes[bytes.startIndex]), let lo = hexValue(bytes[bytes.startIndex + 1]) else {
                    return nil
                }
                out.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
            default:
                out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
