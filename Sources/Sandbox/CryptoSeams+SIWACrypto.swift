import SIWACrypto

extension P256PublicKey: ES256Verifying {}

/// The sandbox's RS256 id_token key, generated at start.
struct SandboxSigningKey: RS256Signing {
    let key: RSAPrivateKey
    let keyID: String
    let modulus: [UInt8]
    let exponent: [UInt8]

    /// A fresh RSA key of `bits` bits with a random 10-character key ID.
    static func generate(bits: Int) throws -> SandboxSigningKey {
        let key = try RSAPrivateKey.generate(bits: bits)
        let pub = key.publicKey
        let kid = String(Base64URL.encode(SecureRandom.bytes(8)).prefix(10))
        return SandboxSigningKey(key: key, keyID: kid, modulus: pub.n, exponent: pub.e)
    }

    func signRS256(_ message: [UInt8]) throws -> [UInt8] {
        try key.signRS256(message)
    }
}

extension SandboxModel {
    /// Parses an SPKI PEM P-256 public key with SIWACrypto.
    static let defaultKeyLoader: @Sendable (String) throws -> any ES256Verifying = { pem in
        try P256PublicKey(pem: pem)
    }
}
