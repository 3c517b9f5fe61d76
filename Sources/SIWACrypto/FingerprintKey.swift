import COpenSSL

/// Keyed fingerprints of stored secrets (refresh tokens): `hmac:` followed by the first 16
/// lower-case hex characters of HMAC-SHA256(key, secret) (RFC 2104). Unlike a plain hash
/// (`Fingerprint.of`, `sha256:…`), someone holding a leaked token cannot compute its fingerprint
/// and look its user up in a view without the fingerprint key, which is kept apart from the token
/// encryption key. Immutable; the key never appears in `description`.
public struct FingerprintKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// The prefix of every keyed fingerprint.
    public static let prefix = "hmac:"
    private let key: [UInt8]

    /// - Parameter key: at least 16 bytes (32 recommended: `siwa-jobs keygen --token-key` makes one).
    /// - Throws: `CryptoError` `fingerprint.key_length`.
    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count >= 16 else {
            throw CryptoError(code: "fingerprint.key_length", message: "the fingerprint key must be at least 16 bytes (got \(key.count))")
        }
        self.key = key
    }

    /// The fingerprint key derived from a token key (HMAC-SHA256(token key, a fixed label)): the
    /// default when no fingerprint key of its own is configured.
    public init(derivedFrom cipher: TokenCipher) {
        self.key = cipher.derivedKey(label: "siwa-jobs refresh-token fingerprint key v1")
    }

    /// `hmac:` + 16 hex characters of HMAC-SHA256(key, UTF-8 of `secret`).
    public func of(_ secret: String) -> String {
        Self.prefix + String(Hex.encode(HMACSHA256.mac(key: key, message: Array(secret.utf8))).prefix(16))
    }

    public var description: String { "FingerprintKey(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: ["key": "<redacted>"]) }
}

/// HMAC-SHA256 (RFC 2104) through OpenSSL's one-shot `HMAC`.
public enum HMACSHA256 {
    /// The 32-byte MAC of `message` under `key`.
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, &out, &length)
            }
        }
        return out
    }
}

extension TokenCipher {
    /// A key derived from this cipher's key for another purpose: HMAC-SHA256(key, `label`), so the
    /// derived key reveals nothing about the token key.
    public func derivedKey(label: String) -> [UInt8] { HMACSHA256.mac(key: key, message: Array(label.utf8)) }
}
