import Foundation
import SIWACore
import SIWACrypto

/// Refresh-token encryption keys (AES-256-GCM): one current key for sealing, older keys by id for
/// opening tokens sealed before a rotation. The key id is stored beside each ciphertext.
public struct TokenKeyring: Sendable {
    public let current: TokenCipher
    private let byID: [String: TokenCipher]
    /// The key of the stored refresh-token fingerprints (`fingerprint(_:)`).
    public let fingerprints: FingerprintKey

    /// - Parameter fingerprints: the fingerprint key; default derived from `current`
    ///   (`FingerprintKey(derivedFrom:)`).
    public init(current: TokenCipher, previous: [TokenCipher] = [], fingerprints: FingerprintKey? = nil) {
        self.current = current
        self.fingerprints = fingerprints ?? FingerprintKey(derivedFrom: current)
        var map: [String: TokenCipher] = [:]
        for cipher in previous { map[cipher.keyID] = cipher }
        map[current.keyID] = current
        self.byID = map
    }

    /// Seals with the current key. Returns the ciphertext and the key id to store beside it.
    /// - Throws: `CryptoError` if OpenSSL fails.
    public func seal(_ token: String, accountAAD: String) throws(CryptoError) -> (ciphertext: [UInt8], keyID: String) {
        (try current.seal(token, aad: Array(accountAAD.utf8)), current.keyID)
    }

    /// The previous keys' ids, sorted (`SIWA_TOKEN_KEYS_PREVIOUS`), for `doctor`.
    public var previousKeyIDs: [String] { byID.keys.filter { $0 != current.keyID }.sorted() }

    /// The stored fingerprint of a refresh token: `hmac:` + 16 hex (`FingerprintKey`), safe to show;
    /// without the fingerprint key nobody can compute it from a token.
    public func fingerprint(_ token: String) -> String { fingerprints.of(token) }

    /// True when a key with this id is configured (current or previous).
    public func knows(keyID: String) -> Bool { byID[keyID] != nil }

    /// Opens a ciphertext sealed under `keyID`.
    /// - Throws: `ConfigurationError` (naming `SIWA_TOKEN_KEYS_PREVIOUS`) for a key id this
    ///   process was not given; `CryptoError` when the ciphertext was tampered with or the key is
    ///   wrong.
    public func open(_ ciphertext: [UInt8], keyID: String, accountAAD: String) throws -> String {
        guard let cipher = byID[keyID] else {
            throw ConfigurationError("refresh token sealed under key id '\(keyID)', which is not configured: add it to SIWA_TOKEN_KEYS_PREVIOUS")
        }
        return try cipher.open(ciphertext, aad: Array(accountAAD.utf8))
    }
}

extension TokenKeyring {
    /// A cipher from key text as configured, with a message in the key's own terms: text made of
    /// hex digits only is described as hex (how many digits, and that a key is 64), not as base64.
    /// - Parameter setting: the variable named in the error, e.g. `SIWA_TOKEN_KEY`.
    /// - Throws: `ConfigurationError` naming `setting`; never the key itself.
    static func cipher(keyID: String, encodedKey: String, setting: String) throws(ConfigurationError) -> TokenCipher {
        do {
            return try TokenCipher(keyID: keyID, encodedKey: encodedKey)
        } catch {
            let text = encodedKey.trimmingCharacters(in: .whitespacesAndNewlines)
            guard error.code != "cipher.key_id", !text.isEmpty, text.allSatisfy(\.isHexDigit) else {
                throw ConfigurationError("\(error)", setting: setting)
            }
            let bytes = text.count % 2 == 0 ? "\(text.count / 2) bytes" : "an odd number of digits"
            throw ConfigurationError("the token encryption key looks like hex but has \(text.count) hex digits (\(bytes)); "
                + "a key is 64 hex digits (32 bytes), or base64 of 32 bytes: `siwa-jobs keygen --token-key` makes one",
                setting: setting)
        }
    }
}
