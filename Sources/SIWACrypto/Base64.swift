/// Base64 codec shared by `Base64URL` (RFC 4648 §5) and PEM bodies (RFC 4648 §4).
enum Base64 {
    static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func table(_ alphabet: [UInt8]) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }
    static let standardTable = table(standardAlphabet)
    static let urlTable = table(urlAlphabet)

    static func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = input.count - i
        if rest == 1 {
            let n = UInt32(input[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            if pad { out.append(UInt8(ascii: "=")); out.append(UInt8(ascii: "=")) }
        } else if rest == 2 {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            if pad { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `text` with the given lookup table. Trailing `=` padding is accepted but not
    /// required; any other character outside the alphabet (including whitespace) fails.
    static func decode(_ text: some Collection<UInt8>, table: [UInt8]) -> [UInt8]? {
        var chars = Array(text)
        var padding = 0
        while let last = chars.last, last == UInt8(ascii: "=") { chars.removeLast(); padding += 1 }
        if padding > 2 || chars.count % 4 == 1 { return nil }
        if padding > 0 && (chars.count + padding) % 4 != 0 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = table[Int(c)]
            if v == 0xFF { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        return out
    }
}

/// Base64url without padding (RFC 4648 §5, as required by JWS, RFC 7515 §2).
public enum Base64URL {
    /// Encodes `bytes` with the URL-safe alphabet and no `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64.encode(bytes, alphabet: Base64.urlAlphabet, pad: false)
    }

    /// Decodes URL-safe base64; trailing `=` padding is tolerated. Returns nil for any character
    /// outside the URL-safe alphabet (including `+`, `/` and whitespace) or an impossible length.
    public static func decode(_ s: String) -> [UInt8]? {
        Base64.decode(s.utf8, table: Base64.urlTable)
    }
}
