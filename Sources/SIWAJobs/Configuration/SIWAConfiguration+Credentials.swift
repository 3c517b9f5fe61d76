import AppleID
import Foundation
import SIWACore
import SIWACrypto

/// Flag values a command offers instead of the single-team variables (`client-secret`, `seed`).
/// An absent value falls back to its variable; errors then mention the flag too.
public struct CredentialFlags: Sendable {
    public var teamID: String?
    public var keyID: String?
    public var clientID: String?
    public var keyFile: String?

    public init(teamID: String? = nil, keyID: String? = nil, clientID: String? = nil, keyFile: String? = nil) {
        self.teamID = teamID
        self.keyID = keyID
        self.clientID = clientID
        self.keyFile = keyFile
    }
}

extension SIWAConfiguration {
    /// The `.p8` key from `keyFile` (a `--key-file` flag; `-` reads standard input), `SIWA_KEY_FILE`
    /// or `SIWA_PRIVATE_KEY`.
    /// - Throws: `ConfigurationError` when both variables are set, neither is, the file cannot be
    ///   read (with the reason: no such file, a directory, permission denied), group or others
    ///   may access it (`checkKeyFilePermissions`), or the text is not a P-256 key.
    public func privateKey(keyFile: String? = nil) throws(ConfigurationError) -> P256PrivateKey {
        let inlineKey = rawValue("SIWA_PRIVATE_KEY").flatMap { $0.isEmpty ? nil : $0 }   // PEM text as given
        if keyFile == nil, value("SIWA_KEY_FILE") != nil, inlineKey != nil {
            throw ConfigurationError("both SIWA_KEY_FILE and SIWA_PRIVATE_KEY are set: set only one")
        }
        let pem: String
        let source: String
        if let path = keyFile ?? value("SIWA_KEY_FILE") {
            try checkKeyFilePermissions(path, what: "key file", setting: "SIWA_KEY_FILE / --key-file")
            pem = try Self.readText(path, what: "key file", setting: "SIWA_KEY_FILE / --key-file", stdin: keyFile != nil)
            source = "key file \(PrintableText.quotedPath(path))"
        } else if let inline = inlineKey {
            pem = inline
            source = "SIWA_PRIVATE_KEY"
        } else {
            throw ConfigurationError("no .p8 key: set SIWA_KEY_FILE (a path) or SIWA_PRIVATE_KEY (the PEM)")
        }
        do {
            return try P256PrivateKey(pem: pem)
        } catch {
            throw ConfigurationError("\(source) is not a usable Sign in with Apple key: \(error)")
        }
    }

    /// The single team's credentials: `SIWA_TEAM_ID`, `SIWA_KEY_ID`, `SIWA_CLIENT_ID` and the key,
    /// each overridden by its flag when `flags` is given.
    /// - Throws: `ConfigurationError` naming the missing or malformed variable (and flag).
    public func credentials(flags: CredentialFlags? = nil) throws(ConfigurationError) -> AppleCredentials {
        let team = try require("SIWA_TEAM_ID", override: flags?.teamID, flag: flags.map { _ in "team-id" })
        let kid = try require("SIWA_KEY_ID", override: flags?.keyID, flag: flags.map { _ in "key-id" })
        let client = try require("SIWA_CLIENT_ID", override: flags?.clientID, flag: flags.map { _ in "client-id" })
        let key = try privateKey(keyFile: flags?.keyFile)
        do {
            return try AppleCredentials(teamID: team, keyID: kid, clientID: client, privateKey: key)
        } catch {
            let names = ["teamID": "SIWA_TEAM_ID / --team-id", "keyID": "SIWA_KEY_ID / --key-id", "clientID": "SIWA_CLIENT_ID / --client-id"]
            throw ConfigurationError(error.message, setting: error.setting.map { names[$0] ?? $0 } ?? "credentials")
        }
    }

    /// Refresh-token encryption keys: `SIWA_TOKEN_KEY_FILE` or `SIWA_TOKEN_KEY` under
    /// `SIWA_TOKEN_KEY_ID` (default `k1`), plus `SIWA_TOKEN_KEYS_PREVIOUS` (`id:key,id:key`).
    /// - Throws: `ConfigurationError` naming the variable: no key, unreadable file, a key that is
    ///   not 32 bytes as hex or base64 (described in hex terms when it is hex digits), a malformed
    ///   or repeated previous key.
    public func keyring() throws(ConfigurationError) -> TokenKeyring {
        let keyID = value("SIWA_TOKEN_KEY_ID") ?? "k1"
        let encoded: String
        if let path = value("SIWA_TOKEN_KEY_FILE") {
            try checkKeyFilePermissions(path, what: "SIWA_TOKEN_KEY_FILE", setting: "SIWA_TOKEN_KEY_FILE")
            encoded = try Self.readText(path, what: "SIWA_TOKEN_KEY_FILE", setting: nil)
        } else if let inline = value("SIWA_TOKEN_KEY") {
            encoded = inline
        } else {
            throw ConfigurationError("no token encryption key: set SIWA_TOKEN_KEY_FILE or SIWA_TOKEN_KEY "
                + "(32 bytes as 64 hex chars or base64; `siwa-jobs keygen --token-key` makes one)")
        }
        let current = try TokenKeyring.cipher(keyID: keyID, encodedKey: encoded, setting: "SIWA_TOKEN_KEY")
        var previous: [TokenCipher] = []
        for entry in (value("SIWA_TOKEN_KEYS_PREVIOUS") ?? "").split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else {
                throw ConfigurationError("expected id:key pairs separated by commas", setting: "SIWA_TOKEN_KEYS_PREVIOUS")
            }
            guard parts[0] != keyID, !previous.contains(where: { $0.keyID == parts[0] }) else {
                throw ConfigurationError("key id '\(parts[0])' is listed twice (or equals SIWA_TOKEN_KEY_ID)",
                                         setting: "SIWA_TOKEN_KEYS_PREVIOUS")
            }
            previous.append(try TokenKeyring.cipher(keyID: parts[0], encodedKey: parts[1],
                                                    setting: "SIWA_TOKEN_KEYS_PREVIOUS key '\(parts[0])'"))
        }
        return TokenKeyring(current: current, previous: previous, fingerprints: try fingerprintKey())
    }
}

extension SIWAConfiguration {
    /// The refresh-token fingerprint key: `SIWA_FINGERPRINT_KEY_FILE` or `SIWA_FINGERPRINT_KEY` (32
    /// bytes as 64 hex characters or base64, like the token key; keep it apart from it), or nil:
    /// derived from the current token key, so fingerprints change when that key is rotated.
    /// - Throws: `ConfigurationError` naming the variable.
    func fingerprintKey() throws(ConfigurationError) -> FingerprintKey? {
        let encoded: String
        if let path = value("SIWA_FINGERPRINT_KEY_FILE") {
            try checkKeyFilePermissions(path, what: "SIWA_FINGERPRINT_KEY_FILE", setting: "SIWA_FINGERPRINT_KEY_FILE")
            encoded = try Self.readText(path, what: "SIWA_FINGERPRINT_KEY_FILE", setting: nil)
        } else if let inline = value("SIWA_FINGERPRINT_KEY") {
            encoded = inline
        } else {
            return nil
        }
        let cipher = try TokenKeyring.cipher(keyID: "fp", encodedKey: encoded, setting: "SIWA_FINGERPRINT_KEY")
        return FingerprintKey(derivedFrom: cipher)
    }

    /// The bytes of a file a setting names (at most 1 MiB: keys and the teams file are small).
    /// - Throws: `ConfigurationError` `WHAT 'PATH' cannot be read: REASON (SETTING)`.
    /// - Parameter stdin: `-` reads standard input (a flag's value, never a variable's).
    static func readBytes(_ path: String, what: String, setting: String?, stdin: Bool = false) throws(ConfigurationError) -> [UInt8] {
        do {
            return try InputFile.read(path, limit: 1 << 20, stdin: stdin)
        } catch {
            throw ConfigurationError("\(what) \(PrintableText.quotedPath(path)) cannot be read: \(error.reasonText)"
                + (setting.map { " (\($0))" } ?? ""))
        }
    }

    /// `readBytes` as UTF-8 text.
    static func readText(_ path: String, what: String, setting: String?, stdin: Bool = false) throws(ConfigurationError) -> String {
        String(decoding: try readBytes(path, what: what, setting: setting, stdin: stdin), as: UTF8.self)
    }
}
