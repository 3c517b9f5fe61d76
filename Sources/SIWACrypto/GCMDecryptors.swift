import COpenSSL
import Synchronization

/// AES-256-GCM decryption contexts of one key, kept for reuse (`TokenCipher.open`).
///
/// A context is made once with the cipher, the 12-byte nonce length and the key (its key schedule
/// computed then); an open sets only the nonce (`EVP_DecryptInit_ex` with a null key keeps the
/// key, OpenSSL's EVP_EncryptInit(3)). Making a context per open (allocate, fetch the cipher from
/// the provider, expand the key, free) was most of the cost of decrypting a refresh token.
/// Thread-safe: a context is used by one caller at a time; at most `keep` idle ones are kept.
final class GCMDecryptors: @unchecked Sendable {
    private let key: [UInt8]
    /// Idle contexts (`EVP_CIPHER_CTX *` bit patterns: a plain integer crosses the lock).
    private let idle = Mutex<[UInt]>([])
    private let keep: Int

    /// - Parameters:
    ///   - key: the 32-byte AES-256 key.
    ///   - keep: most idle contexts kept (more are freed when given back).
    init(key: [UInt8], keep: Int = 64) {
        self.key = key
        self.keep = keep
    }

    deinit {
        for pattern in idle.withLock({ $0 }) { EVP_CIPHER_CTX_free(OpaquePointer(bitPattern: pattern)) }
    }

    /// An idle context, or a new one set up with the key.
    /// - Throws: `CryptoError` ("cipher.failed") when OpenSSL cannot make one.
    func take() throws(CryptoError) -> OpaquePointer {
        if let pattern = idle.withLock({ $0.popLast() }), let ctx = OpaquePointer(bitPattern: pattern) { return ctx }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OpenSSL.failure("cipher.failed", "out of memory") }
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              copenssl_gcm_set_ivlen(ctx, Int32(TokenCipher.nonceSize)) == 1,
              EVP_DecryptInit_ex(ctx, nil, nil, key, nil) == 1 else {
            EVP_CIPHER_CTX_free(ctx)
            throw OpenSSL.failure("cipher.failed", "AES-GCM decryption setup failed")
        }
        return ctx
    }

    /// Returns `ctx` for reuse when `reusable` (its last use set a nonce: the next open starts
    /// over), else frees it.
    func giveBack(_ ctx: OpaquePointer, reusable: Bool) {
        let pattern = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(ctx)))
        let kept = reusable && idle.withLock { contexts -> Bool in
            guard contexts.count < keep else { return false }
            contexts.append(pattern)
            return true
        }
        if !kept { EVP_CIPHER_CTX_free(ctx) }
    }
}
