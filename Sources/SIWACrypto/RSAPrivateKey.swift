import COpenSSL

/// An RSA private key for RS256 (RFC 7518 §3.3), e.g. the sandbox's id_token signing key.
/// Immutable after init; concurrent signing is safe (fresh EVP_MD_CTX per call), hence
/// `@unchecked Sendable`.
public final class RSAPrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a random RSA key with public exponent 65537.
    /// - Parameter bits: modulus size, 2048...8192.
    /// - Throws: `CryptoError` `keygen.bits` for an out-of-range size, `keygen.failed`.
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        guard (2048...8192).contains(bits) else {
            throw CryptoError(code: "keygen.bits", message: "RSA key size must be 2048...8192 bits (got \(bits))")
        }
        let pkey = try OpenSSL.generate(copenssl_key_type_rsa()) { copenssl_rsa_keygen_bits($0, Int32(bits)) }
        return RSAPrivateKey(owning: pkey)
    }

    /// Loads a PKCS#8 (`PRIVATE KEY`) or PKCS#1 (`RSA PRIVATE KEY`) PEM, with the same layout
    /// tolerance as `P256PrivateKey(pem:)`.
    /// - Throws: `CryptoError` `pem.*`, `key.invalid`, `key.not_rsa`.
    public init(pem: String) throws(CryptoError) {
        let pkey = try PEM.parse(pem).loadPrivateKey()
        guard EVP_PKEY_get_base_id(pkey) == copenssl_pkey_rsa() else {
            EVP_PKEY_free(pkey)
            throw CryptoError(code: "key.not_rsa", message: "the key is not an RSA key")
        }
        self.pkey = pkey
    }

    /// Unencrypted PKCS#8 PEM (label `PRIVATE KEY`).
    public var pkcs8PEM: String { OpenSSL.privatePEM(pkey) }

    /// The matching public key.
    public var publicKey: RSAPublicKey {
        if let pub = OpenSSL.publicOnly(pkey) { return RSAPublicKey(owning: pub) }
        EVP_PKEY_up_ref(pkey)
        return RSAPublicKey(owning: pkey)
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWS `RS256`). Returns a signature as long as the modulus.
    /// - Throws: `CryptoError` `sign.failed`.
    public func signRS256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        OpenSSL.clearErrors()
        guard let signature = OpenSSL.digestSign(pkey, message) else {
            throw OpenSSL.failure("sign.failed", "RSA signing failed")
        }
        return signature
    }
}
