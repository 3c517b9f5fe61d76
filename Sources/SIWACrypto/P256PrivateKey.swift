import COpenSSL

/// An ECDSA P-256 private key (for example Apple's `AuthKey_<KEYID>.p8`), held as an OpenSSL
/// EVP_PKEY. Immutable after init; OpenSSL allows concurrent signing with one key, each call
/// using its own EVP_MD_CTX, hence `@unchecked Sendable`.
public final class P256PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Loads a P-256 private key from PEM text in every layout seen in the wild:
    /// - PKCS#8 (label `PRIVATE KEY`, Apple's .p8) or SEC1 (label `EC PRIVATE KEY`);
    /// - CRLF line endings, literal two-character `\n` sequences (env vars), the whole base64
    ///   body on one line, surrounding whitespace or quotes.
    /// - Throws: `CryptoError` with code `pem.not_pem`, `pem.base64`, `pem.encrypted`,
    ///   `key.not_ec` (e.g. RSA or Ed25519), `key.not_p256` (e.g. P-384), `key.not_private`,
    ///   or `key.invalid`.
    public init(pem: String) throws(CryptoError) {
        let block = try PEM.parse(pem)
        if PEMKind(label: block.label) == .pkcs1RSA {
            throw CryptoError(code: "key.not_ec", message: "the key is an RSA key; an EC P-256 key is required")
        }
        let pkey = try block.loadPrivateKey()
        do {
            try Self.requireP256(pkey)
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        self.pkey = pkey
    }

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh random P-256 key.
    /// - Throws: `CryptoError` `keygen.failed` if OpenSSL fails.
    public static func generate() throws(CryptoError) -> P256PrivateKey {
        let pkey = try OpenSSL.generate(copenssl_key_type_ec()) { copenssl_ec_paramgen_curve_p256($0) }
        return P256PrivateKey(owning: pkey)
    }

    /// The key as unencrypted PKCS#8 PEM (label `PRIVATE KEY`), 64-character lines.
    public var pkcs8PEM: String { OpenSSL.privatePEM(pkey) }

    /// The matching public key.
    public var publicKey: P256PublicKey {
        // i2d/d2i of a valid EC key cannot fail short of allocation failure; in that case the
        // public key shares the private EVP_PKEY (verification only reads the public half).
        if let pub = OpenSSL.publicOnly(pkey) { return P256PublicKey(owning: pub) }
        EVP_PKEY_up_ref(pkey)
        return P256PublicKey(owning: pkey)
    }

    /// ES256 per RFC 7518 §3.4: ECDSA P-256 over SHA-256(message).
    /// - Returns: the raw 64-byte R‖S (each left-padded to 32 bytes), never DER.
    /// - Throws: `CryptoError` `sign.failed`.
    public func signES256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        OpenSSL.clearErrors()
        guard let der = OpenSSL.digestSign(pkey, message) else {
            throw OpenSSL.failure("sign.failed", "ECDSA signing failed")
        }
        guard let raw = ECDSASignature.rawFromDER(der) else {
            throw CryptoError(code: "sign.failed", message: "OpenSSL returned an unparseable ECDSA signature")
        }
        return raw
    }

    static func requireP256(_ pkey: OpaquePointer) throws(CryptoError) {
        guard EVP_PKEY_get_base_id(pkey) == copenssl_pkey_ec() else {
            let name = EVP_PKEY_get0_type_name(pkey).map { String(cString: $0) } ?? "unknown"
            throw CryptoError(code: "key.not_ec", message: "the key type is \(name); an EC P-256 key is required")
        }
        let group = OpenSSL.groupName(pkey) ?? "unknown"
        guard group == "prime256v1" || group == "P-256" else {
            throw CryptoError(code: "key.not_p256", message: "the EC key is on curve \(group); P-256 (prime256v1) is required")
        }
    }
}
