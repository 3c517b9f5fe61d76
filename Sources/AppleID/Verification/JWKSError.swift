/// A JWKS document could not be fetched or used. `field` names the part at fault (`json`,
/// `keys`, `keys[2].n`, `fetch`, ...); `message` says why. Never contains key material beyond
/// key ids.
public struct JWKSError: Error, CustomStringConvertible, Sendable, Equatable {
    public let field: String
    public let message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "JWKS \(field): \(message)" }
}
