/// An error from a SIWACrypto operation.
///
/// `code` is a stable dotted identifier (for example `pem.base64`, `key.not_p256`,
/// `cipher.auth_failed`); `message` explains it in words. Neither ever contains key material,
/// plaintext or tokens, so `description` is safe to log.
public struct CryptoError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Stable machine-readable code, e.g. `pem.not_pem`.
    public let code: String
    /// Human-readable explanation, free of secrets.
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
