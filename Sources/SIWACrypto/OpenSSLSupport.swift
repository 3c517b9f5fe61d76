import COpenSSL

/// Small helpers around OpenSSL's error queue, memory BIOs and EVP_PKEY handles.
enum OpenSSL {
    /// Drains this thread's OpenSSL error queue and returns a `CryptoError` whose message names
    /// the failed step plus OpenSSL's reason string (reason strings never contain key bytes).
    static func failure(_ code: String, _ step: String) -> CryptoError {
        var reasons: [String] = []
        while true {
            let e = ERR_get_error()
            if e == 0 { break }
            if let reason = ERR_reason_error_string(e) { reasons.append(String(cString: reason)) }
        }
        let suffix = reasons.isEmpty ? "" : " (\(reasons.prefix(3).joined(separator: "; ")))"
        return CryptoError(code: code, message: step + suffix)
    }

    /// Clears stale entries left on this thread's error queue by earlier failures.
    static func clearErrors() { ERR_clear_error() }

    /// Calls `body` with a read-only memory BIO over `bytes`.
    static func withReadBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) -> T?) -> T? {
        bytes.withUnsafeBytes { raw -> T? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    /// Runs `write` against a fresh memory BIO and returns what it wrote as text, or nil if the
    /// writer reported failure.
    static func writeToString(_ write: (OpaquePointer) -> Int32) -> String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_bio_mem_contents(bio, &data)
        guard let data, length > 0 else { return nil }
        let buffer = UnsafeRawBufferPointer(start: data, count: Int(length))
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Reads a BIGNUM-valued parameter (e.g. `n`, `e`, `qx`) of a key as big-endian bytes,
    /// left-padded to `width` bytes when `width` is given.
    static func bigNumberParam(_ pkey: OpaquePointer, _ name: UnsafePointer<CChar>, width: Int? = nil) -> [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &bn) == 1, let bn else { return [] }
        defer { BN_free(bn) }
        let natural = Int((BN_num_bits(bn) + 7) / 8)
        let size = max(width ?? natural, natural)
        var out = [UInt8](repeating: 0, count: size)
        _ = BN_bn2binpad(bn, &out, Int32(size))
        return out
    }

    /// The curve name of an EC key (`prime256v1` for P-256), or nil.
    static func groupName(_ pkey: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pkey, copenssl_param_group_name(), &buffer, buffer.count, &length) == 1 else {
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Signs `message` with SHA-256 using `pkey` (ECDSA gives DER; RSA gives PKCS#1 v1.5).
    static func digestSign(_ pkey: OpaquePointer, _ message: [UInt8]) -> [UInt8]? {
        guard let ctx = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else { return nil }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &signature, &length, message, message.count) == 1 else { return nil }
        return Array(signature.prefix(length))
    }

    /// Verifies a SHA-256 signature (DER for ECDSA, PKCS#1 v1.5 for RSA).
    static func digestVerify(_ pkey: OpaquePointer, signature: [UInt8], message: [UInt8]) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        let ok = EVP_DigestVerify(ctx, signature, signature.count, message, message.count) == 1
        clearErrors()
        return ok
    }

    /// Generates a key of `type` ("EC" or "RSA") after `configure` sets its parameters.
    static func generate(_ type: UnsafePointer<CChar>, configure: (OpaquePointer) -> Int32) throws(CryptoError) -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw failure("keygen.failed", "could not create a key generation context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, configure(ctx) > 0, EVP_PKEY_generate(ctx, &pkey) == 1, let pkey else {
            throw failure("keygen.failed", "key generation failed")
        }
        return pkey
    }

    /// SPKI "PUBLIC KEY" PEM of `pkey`.
    static func publicPEM(_ pkey: OpaquePointer) -> String {
        writeToString { PEM_write_bio_PUBKEY($0, pkey) } ?? ""
    }

    /// PKCS#8 "PRIVATE KEY" PEM of `pkey` (unencrypted).
    static func privatePEM(_ pkey: OpaquePointer) -> String {
        writeToString { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) } ?? ""
    }

    /// A new EVP_PKEY holding only the public half of `pkey` (round-trip through SPKI DER).
    static func publicOnly(_ pkey: OpaquePointer) -> OpaquePointer? {
        let length = i2d_PUBKEY(pkey, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var p = buffer.baseAddress
            return i2d_PUBKEY(pkey, &p)
        }
        guard written == length else { return nil }
        return der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var p = buffer.baseAddress
            return d2i_PUBKEY(nil, &p, Int(length))
        }
    }
}
