/// `application/x-www-form-urlencoded` bodies as Apple requires them (TN3107: "form data not
/// percent-encoded" gives `invalid_request`/`invalid_client`).
///
/// Encoding leaves only RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`) as-is and
/// percent-encodes every other UTF-8 byte, including space (as `%20`), `+`, `/`, `=` and `&`.
public enum FormEncoding {
    /// `name=value&name=value` in the given order.
    public static func encode(_ fields: [(String, String)]) -> String {
        fields.map { percentEncode($0.0) + "=" + percentEncode($0.1) }.joined(separator: "&")
    }

    /// Percent-encodes one name or value.
    public static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
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
