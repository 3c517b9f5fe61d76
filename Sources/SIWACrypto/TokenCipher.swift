import COpenSSL
import Foundation

/// Encrypts refresh tokens at rest with AES-256-GCM (NIST SP 800-38D).
///
/// Sealed layout: 12-byte random nonce ‖ ciphertext ‖ 16-byte tag. Store `keyID` next to the
/// sealed bytes so keys can be rotated. Optional AAD (e.g. the account id) binds a ciphertext
/// to its row: opening with different AAD fails. The key never appears in `description`.
public struct TokenCipher: Sendable, CustomStringConvertible, CustomReflectable {
    public static let nonceSize = 12
    public static let tagSize = 16

    /// Identifier of the key, stored alongside ciphertexts (e.g. "k2026-01").
    public let keyID: String
    let key: [UInt8]
    /// Reused decryption contexts of `key` (`GCMDecryptors`).
    let decryptors: GCMDecryptors

    /// - Parameter key: exactly 32 bytes.
    /// - Throws: `CryptoError` `cipher.key_length`, `cipher.key_id` (empty or > 64 chars).
    public init(keyID: String, key: [UInt8]) throws(CryptoError) {
        guard key.count == 32 else {
            throw CryptoError(code: "cipher.key_length", message: "the token encryption key must be 32 bytes (got \(key.count))")
        }
        guard !keyID.isEmpty, keyID.count <= 64, !keyID.contains(where: { $0.isWhitespace }) else {
            throw CryptoError(code: "cipher.key_id", message: "the key id must be 1...64 characters without whitespace")
        }
        self.keyID = keyID
        self.key = key
        self.decryptors = GCMDecryptors(key: key)
    }

    /// Key material as text, as read from a file or env var: 64 hex characters, or standard /
    /// URL-safe base64 of 32 bytes. Surrounding whitespace is trimmed.
    /// - Throws: `CryptoError` `cipher.key_encoding`, `cipher.key_length`, `cipher.key_id`.
    public init(keyID: String, encodedKey: String) throws(CryptoError) {
        let text = encodedKey.trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes: [UInt8]
        if text.count == 64, let hex = Hex.decode(text) {
            bytes = hex
        } else if let b64 = Base64.decode(text.utf8, table: Base64.standardTable) ?? Base64URL.decode(text) {
            bytes = b64
        } else {
            throw CryptoError(code: "cipher.key_encoding", message: "the token encryption key must be 64 hex characters or base64 of 32 bytes")
        }
        try self.init(keyID: keyID, key: bytes)
    }

    public var description: String { "TokenCipher(keyID: \(keyID))" }
    public var customMirror: Mirror { Mirror(self, children: ["keyID": keyID]) }

    /// Encrypts `plaintext` (UTF-8) with a fresh random nonce.
    /// - Returns: nonce ‖ ciphertext ‖ tag (`plaintext.utf8.count + 28` bytes).
    /// - Throws: `CryptoError` `cipher.failed`.
    public func seal(_ plaintext: String, aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let nonce = SecureRandom.bytes(Self.nonceSize)
        let input = Array(plaintext.utf8)
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OpenSSL.failure("cipher.failed", "out of memory") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        OpenSSL.clearErrors()
        var ciphertext = [UInt8](repeating: 0, count: input.count + 16)
        var tag = [UInt8](repeating: 0, count: Self.tagSize)
        var length: Int32 = 0
        var total = 0
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              copenssl_gcm_set_ivlen(ctx, Int32(Self.nonceSize)) == 1,
              EVP_EncryptInit_ex(ctx, nil, nil, key, nonce) == 1,
              aad.isEmpty || EVP_EncryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1,
              EVP_EncryptUpdate(ctx, &ciphertext, &length, input, Int32(input.count)) == 1 else {
            throw OpenSSL.failure("cipher.failed", "AES-GCM encryption failed")
        }
        total = Int(length)
        let finalOK = ciphertext.withUnsafeMutableBufferPointer { buffer -> Bool in
            EVP_EncryptFinal_ex(ctx, buffer.baseAddress.map { $0 + total }, &length) == 1
        }
        guard finalOK, copenssl_gcm_get_tag(ctx, Int32(Self.tagSize), &tag) == 1 else {
            throw OpenSSL.failure("cipher.failed", "AES-GCM finalisation failed")
        }
        total += Int(length)
        return nonce + ciphertext.prefix(total) + tag
    }

    /// Decrypts and authenticates `sealed` from `seal(_:aad:)`.
    /// - Throws: `CryptoError` `cipher.too_short`, `cipher.auth_failed` (wrong key, wrong AAD or
    ///   tampered bytes), `cipher.not_utf8`.
    public func open(_ sealed: [UInt8], aad: [UInt8] = []) throws(CryptoError) -> String {
        guard sealed.count >= Self.nonceSize + Self.tagSize else {
            throw CryptoError(code: "cipher.too_short", message: "sealed value is \(sealed.count) bytes; at least 28 expected")
        }
        let bodyCount = sealed.count - Self.nonceSize - Self.tagSize
        let ctx = try decryptors.take()
        OpenSSL.clearErrors()
        var plaintext = [UInt8](repeating: 0, count: bodyCount + 16)
        var length: Int32 = 0, finalLength: Int32 = 0
        var nonceSet = false
        let opened = sealed.withUnsafeBufferPointer { input -> Bool? in
            guard let nonce = input.baseAddress else { return nil }
            let body = nonce + Self.nonceSize
            guard EVP_DecryptInit_ex(ctx, nil, nil, nil, nonce) == 1 else { return nil }
            nonceSet = true
            // The tag is only read (EVP_CTRL_GCM_SET_TAG copies it), so it is passed in place.
            let tag = UnsafeMutableRawPointer(mutating: body + bodyCount)
            return plaintext.withUnsafeMutableBufferPointer { out -> Bool? in
                guard aad.isEmpty || EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1,
                      EVP_DecryptUpdate(ctx, out.baseAddress, &length, body, Int32(bodyCount)) == 1,
                      copenssl_gcm_set_tag(ctx, Int32(Self.tagSize), tag) == 1 else { return nil }
                return EVP_DecryptFinal_ex(ctx, out.baseAddress.map { $0 + Int(length) }, &finalLength) == 1
            }
        }
        decryptors.giveBack(ctx, reusable: nonceSet)
        guard let opened else { throw OpenSSL.failure("cipher.failed", "AES-GCM decryption setup failed") }
        guard opened else {
            OpenSSL.clearErrors()
            throw CryptoError(code: "cipher.auth_failed", message: "authentication failed: wrong key, wrong AAD, or tampered ciphertext")
        }
        guard let text = String(validating: plaintext.prefix(Int(length) + Int(finalLength)), as: UTF8.self) else {
            throw CryptoError(code: "cipher.not_utf8", message: "decrypted value is not UTF-8")
        }
        return text
    }
}
