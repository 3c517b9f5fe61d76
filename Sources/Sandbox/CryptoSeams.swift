/// Verifies ES256 JWS signatures for one registered team key.
///
/// Only the JWS form (raw 64-byte R‖S, RFC 7515 §A.3) may verify; ASN.1 DER signatures must be
/// rejected, as Apple rejects them (TN3107).
protocol ES256Verifying: Sendable {
    func verifyES256(signature: [UInt8], message: [UInt8]) -> Bool
}

/// The sandbox's id_token signing key (RS256) and its public JWK parts.
protocol RS256Signing: Sendable {
    /// Key ID published in the JWKS and in id_token headers.
    var keyID: String { get }
    /// RSA modulus, big-endian bytes.
    var modulus: [UInt8] { get }
    /// RSA public exponent, big-endian bytes.
    var exponent: [UInt8] { get }
    /// PKCS#1 v1.5 SHA-256 signature over `message`.
    func signRS256(_ message: [UInt8]) throws -> [UInt8]
}

/// A failure to load key material handed to the admin API.
struct KeyLoadError: Error, CustomStringConvertible {
    var description: String
}
