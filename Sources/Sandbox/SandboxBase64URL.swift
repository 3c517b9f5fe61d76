/// Unpadded base64url (RFC 4648 §5) as used in JWS segments.
/// TEMPORARY: replaced by SIWACrypto.Base64URL once that module lands.
enum SandboxBase64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var acc: UInt32 = 0
        var bits = 0
        for b in bytes {
            acc = acc << 8 | UInt32(b)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int((acc >> UInt32(bits)) & 63)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((acc << UInt32(6 - bits)) & 63)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// `nil` for characters outside the alphabet, padding, or an impossible length.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        if text.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in text {
            let v = reverse[Int(c)]
            if v == 0xFF { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        return out
    }
}
