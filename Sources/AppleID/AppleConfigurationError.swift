/// A configuration value is unusable. `field` names it (`teamID`, `keyID`, `clientID`,
/// `privateKey`, `lifetime`); `message` says why. Never contains key material.
public struct AppleConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    public let field: String
    public let message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "invalid \(field): \(message)" }
}
