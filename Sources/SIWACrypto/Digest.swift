import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface.
public enum Digest {
    /// The 32-byte SHA-256 digest of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { md in
                _ = SHA256(input.baseAddress, input.count, md.baseAddress)
            }
        }
        return out
    }

    /// Lower-case hex SHA-256 of the UTF-8 bytes of `s` (64 characters).
    public static func sha256Hex(_ s: String) -> String {
        Hex.encode(sha256(Array(s.utf8)))
    }
}

/// Safe-to-log identifiers for secrets.
public enum Fingerprint {
    /// `"sha256:"` followed by the first 16 lower-case hex characters of SHA-256(secret).
    /// Stable across runs; reveals nothing useful about the secret. Use it in logs and columns.
    public static func of(_ secret: String) -> String {
        "sha256:" + String(Digest.sha256Hex(secret).prefix(16))
    }
}

/// Cryptographically secure random bytes.
public enum SecureRandom {
    /// `count` bytes from OpenSSL `RAND_bytes` (falls back to the system CSPRNG if OpenSSL's
    /// generator reports failure). A non-positive count returns an empty array.
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        if RAND_bytes(&out, Int32(count)) == 1 { return out }
        var generator = SystemRandomNumberGenerator()
        for i in out.indices { out[i] = generator.next() }
        return out
    }
}

/// Lower-case hexadecimal encoding and decoding.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lower-case hex digits per byte.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes from hex text (either case); `nil` for an odd length or a non-hex character.
    public static func decode(_ s: String) -> [UInt8]? {
        let chars = Array(s.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
