import COpenSSL

/// An ECDSA P-256 public key. Immutable after init; safe to verify from many threads at once
/// (each call uses its own EVP_MD_CTX), hence `@unchecked Sendable`.
public final class P256PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// Loads an SPKI public key (PEM label `PUBLIC KEY`), with the same layout tolerance as
    /// `P256PrivateKey(pem:)`.
    /// - Throws: `CryptoError` `pem.*`, `key.invalid`, `key.not_ec`, `key.not_p256`.
    public init(pem: String) throws(CryptoError) {
        let pkey = try PEM.parse(pem).loadPublicKey()
        do {
            try P256PrivateKey.requireP256(pkey)
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        self.pkey = pkey
    }

    /// Builds a key from its affine coordinates (JWK `x`, `y`; RFC 7518 §6.2.1), 32 bytes each.
    /// - Throws: `CryptoError` `key.invalid` for wrong lengths or a point not on the curve.
    public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else {
            throw CryptoError(code: "key.invalid", message: "P-256 coordinates must be 32 bytes each (got \(x.count) and \(y.count))")
        }
        // OSSL_PARAM_BLD keeps the value pointers until EVP_PKEY_fromdata: use a heap buffer
        // that outlives the build, and static C strings for keys and the group name.
        let point = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 65)
        defer { point.deallocate() }
        point[0] = 0x04
        for i in 0..<32 { point[1 + i] = x[i]; point[33 + i] = y[i] }
        OpenSSL.clearErrors()
        guard let builder = OSSL_PARAM_BLD_new() else { throw OpenSSL.failure("key.invalid", "out of memory") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_utf8_string(builder, copenssl_param_group_name(), copenssl_curve_p256(), 0) == 1,
              OSSL_PARAM_BLD_push_octet_string(builder, copenssl_param_pub_key(), point.baseAddress, 65) == 1,
              let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw OpenSSL.failure("key.invalid", "could not build EC key parameters")
        }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, copenssl_key_type_ec(), nil) else {
            throw OpenSSL.failure("key.invalid", "could not create an EC context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1,
              EVP_PKEY_fromdata(ctx, &pkey, copenssl_evp_pkey_public_key(), params) == 1,
              let pkey else {
            throw OpenSSL.failure("key.invalid", "the coordinates are not a point on P-256")
        }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
            EVP_PKEY_free(pkey)
            throw OpenSSL.failure("key.invalid", "could not create a check context")
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check(check) == 1 else {
            EVP_PKEY_free(pkey)
            throw OpenSSL.failure("key.invalid", "the coordinates are not a valid P-256 public key")
        }
        self.pkey = pkey
    }

    /// SPKI PEM (label `PUBLIC KEY`), 64-character lines.
    public var spkiPEM: String { OpenSSL.publicPEM(pkey) }

    /// Affine x coordinate, 32 bytes big-endian.
    public var x: [UInt8] { OpenSSL.bigNumberParam(pkey, copenssl_param_ec_pub_x(), width: 32) }

    /// Affine y coordinate, 32 bytes big-endian.
    public var y: [UInt8] { OpenSSL.bigNumberParam(pkey, copenssl_param_ec_pub_y(), width: 32) }

    /// Verifies an ES256 signature (RFC 7518 §3.4) over SHA-256(message).
    /// - Returns: true only for a valid raw 64-byte R‖S; a DER signature, any other length or a
    ///   wrong signature returns false.
    public func verifyES256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == 64, let der = ECDSASignature.derFromRaw(signature) else { return false }
        return OpenSSL.digestVerify(pkey, signature: der, message: message)
    }
}
