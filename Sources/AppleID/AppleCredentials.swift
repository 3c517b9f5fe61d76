import SIWACore
import SIWACrypto

/// What Apple needs to authenticate one client (Apple "Creating a client secret"): the Team ID
/// (`iss`), the Key ID of the .p8 key (`kid`), the client ID (`sub`, the App ID / bundle ID or
/// Services ID), and the P-256 private key. Validated once at the edge.
public struct AppleCredentials: Sendable, CustomStringConvertible {
    public let teamID: String
    public let keyID: String
    public let clientID: String
    public let privateKey: P256PrivateKey

    /// - Throws: `ConfigurationError` whose `setting` names the field:
    ///   - `teamID`, `keyID`: exactly 10 characters `A-Z0-9`;
    ///   - `clientID`: non-empty, no whitespace, reverse-DNS (`com.example.app`: at least two
    ///     dot-separated labels of `A-Za-z0-9-`), not the team ID and not prefixed by it
    ///     (Apple: the client ID "must not include your Team ID").
    public init(teamID: String, keyID: String, clientID: String, privateKey: P256PrivateKey) throws(ConfigurationError) {
        try Self.checkIdentifier(teamID, field: "teamID", what: "Team ID")
        try Self.checkIdentifier(keyID, field: "keyID", what: "Key ID")
        try Self.checkClientID(clientID, teamID: teamID)
        self.teamID = teamID
        self.keyID = keyID
        self.clientID = clientID
        self.privateKey = privateKey
    }

    /// Same as the designated init, loading the key from .p8 PEM text (any layout that
    /// `P256PrivateKey(pem:)` accepts).
    /// - Throws: `ConfigurationError` with setting `privateKey` carrying the `CryptoError` text.
    public init(teamID: String, keyID: String, clientID: String, privateKeyPEM: String) throws(ConfigurationError) {
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(pem: privateKeyPEM)
        } catch {
            throw ConfigurationError(error.description, setting: "privateKey")
        }
        try self.init(teamID: teamID, keyID: keyID, clientID: clientID, privateKey: key)
    }

    public var description: String { "AppleCredentials(team: \(teamID), key: \(keyID), client: \(clientID))" }

    private static func checkIdentifier(_ value: String, field: String, what: String) throws(ConfigurationError) {
        let allowed: (Character) -> Bool = { $0.isASCII && ($0.isUppercase || $0.isNumber) }
        if value.count != 10 {
            throw ConfigurationError("\(what) must be exactly 10 characters A-Z or 0-9 (got \(value.count))", setting: field)
        }
        if let bad = value.first(where: { !allowed($0) }) {
            throw ConfigurationError("\(what) must be 10 characters A-Z or 0-9; '\(bad)' is not allowed", setting: field)
        }
    }

    private static func checkClientID(_ value: String, teamID: String) throws(ConfigurationError) {
        guard !value.isEmpty else {
            throw ConfigurationError("client ID is empty", setting: "clientID")
        }
        guard !value.contains(where: { $0.isWhitespace }) else {
            throw ConfigurationError("client ID contains whitespace", setting: "clientID")
        }
        guard value != teamID, !value.hasPrefix(teamID + ".") else {
            throw ConfigurationError("client ID must be the bundle ID or Services ID without the Team ID", setting: "clientID")
        }
        let labels = value.split(separator: ".", omittingEmptySubsequences: false)
        let labelOK: (Substring) -> Bool = { label in
            !label.isEmpty && label.utf8.allSatisfy { c in
                (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c) || c == 0x2D
            }
        }
        guard labels.count >= 2, labels.allSatisfy(labelOK) else {
            throw ConfigurationError("client ID must be reverse-DNS like com.example.app (letters, digits, '-', dot-separated)", setting: "clientID")
        }
    }
}
