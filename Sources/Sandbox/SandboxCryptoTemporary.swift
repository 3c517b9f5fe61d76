// TEMPORARY until SIWACrypto lands: no crypto available.
enum SandboxSigningKey {
    static func generate(bits: Int) throws -> any RS256Signing {
        throw KeyLoadError(description: "SIWACrypto not available yet")
    }
}

extension SandboxModel {
    static let defaultKeyLoader: @Sendable (String) throws -> any ES256Verifying = { _ in
        throw KeyLoadError(description: "SIWACrypto not available yet")
    }
}
