import COpenSSL

/// An RSA public key, typically built from a JWK's `n` and `e` (RFC 7518 §6.3.1).
/// Immutable; safe to share across threads, hence `@unchecked Sendable`.
public final class RSAPublicKey: @unchecked Sendable {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// Builds a key from big-endian modulus `n` and exponent `e` (leading zeros allowed).
    /// - Throws: `CryptoError` `key.invalid` for an empty, too short (< 2048 bits) or unusable key,
    ///   or a public exponent that is even or below 65537 (NIST SP 800-56B §6.2.1; a tiny
    ///   exponent such as 3 invites signature forgeries against lax verifiers).
    public init(n: [UInt8], e: [UInt8]) throws(CryptoError) {
        let modulus = n.drop { $0 == 0 }
        guard modulus.count >= 256, modulus.count <= 2048, !e.isEmpty, e.count <= 8 else {
            throw CryptoError(code: "key.invalid", message: "RSA modulus must be 2048..16384 bits and the exponent 1..8 bytes")
        }
        let exponent = e.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard exponent & 1 == 1, exponent >= 65537 else {
            throw CryptoError(code: "key.invalid", message: "RSA public exponent must be odd and at least 65537")
        }
        OpenSSL.clearErrors()
        let bnN = n.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        let bnE = e.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        defer { if let bnN { BN_free(bnN) }; if let bnE { BN_free(bnE) } }
        guard let bnN, let bnE, let builder = OSSL_PARAM_BLD_new() else {
            throw OpenSSL.failure("key.invalid", "out of memory")
        }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the key-name pointers and BIGNUMs until to_param: static C strings
        // from the shim, BIGNUMs freed only after the build (see swift-linux.md §3).
        guard OSSL_PARAM_BLD_push_BN(builder, copenssl_param_rsa_n(), bnN) == 1,
              OSSL_PARAM_BLD_push_BN(builder, copenssl_param_rsa_e(), bnE) == 1,
              let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw OpenSSL.failure("key.invalid", "could not build RSA key parameters")
        }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, copenssl_key_type_rsa(), nil) else {
            throw OpenSSL.failure("key.invalid", "could not create an RSA context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1,
              EVP_PKEY_fromdata(ctx, &pkey, copenssl_evp_pkey_public_key(), params) == 1,
              let pkey else {
            throw OpenSSL.failure("key.invalid", "OpenSSL rejected the RSA parameters")
        }
        self.pkey = pkey
    }

    /// Loads an SPKI PEM (label `PUBLIC KEY`).
    /// - Throws: `CryptoError` `pem.*`, `key.invalid`, `key.not_rsa`.
    public init(pem: String) throws(CryptoError) {
        let pkey = try PEM.parse(pem).loadPublicKey()
        guard EVP_PKEY_get_base_id(pkey) == copenssl_pkey_rsa() else {
            EVP_PKEY_free(pkey)
            throw CryptoError(code: "key.not_rsa", message: "the public key is not an RSA key")
        }
        self.pkey = pkey
    }

    /// SPKI PEM (label `PUBLIC KEY`).
    public var spkiPEM: String { OpenSSL.publicPEM(pkey) }

    /// Modulus, big-endian, no leading zero byte.
    public var n: [UInt8] { OpenSSL.bigNumberParam(pkey, copenssl_param_rsa_n()) }

    /// Public exponent, big-endian (65537 is `[1, 0, 1]`).
    public var e: [UInt8] { OpenSSL.bigNumberParam(pkey, copenssl_param_rsa_e()) }

    /// Verifies an RS256 signature (RSASSA-PKCS1-v1_5, SHA-256) over `message`.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard !signature.isEmpty else { return false }
        return OpenSSL.digestVerify(pkey, signature: signature, message: message)
    }
}
