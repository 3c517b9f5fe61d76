import AppleID
import Foundation
import Postgres
import Queue
import SIWACrypto
import SIWAJobs

/// A configuration error: names the setting and what is wrong. Exit code 78.
struct ConfigError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Everything read from the environment, once, at the edge. Secrets come from files or the
/// environment, never from flags.
///
/// | variable | meaning |
/// |---|---|
/// | `DATABASE_URL` or `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD` | PostgreSQL, libpq conventions |
/// | `SIWA_APPLE_BASE_URL` | default `https://appleid.apple.com`; the sandbox's URL in tests and demos |
/// | `SIWA_TEAM_ID`, `SIWA_KEY_ID`, `SIWA_CLIENT_ID` | team ID, key ID (`kid`) and client ID |
/// | `SIWA_KEY_FILE` or `SIWA_PRIVATE_KEY` | the `.p8` key: a path, or the PEM itself (literal `\n` allowed) |
/// | `SIWA_TOKEN_KEY_FILE` or `SIWA_TOKEN_KEY` | 32-byte AES key (64 hex chars or base64) for refresh tokens at rest |
/// | `SIWA_TOKEN_KEY_ID` | id stored with each ciphertext; default `k1` |
/// | `SIWA_TOKEN_KEYS_PREVIOUS` | older keys for rotation: `id:key,id:key` |
/// | `SIWA_LOG_LEVEL` | `debug`, `info` (default), `warning`, `error` |
/// | `SIWA_LOG_FORMAT` | `json` or `text`; default json unless stderr is a terminal |
struct Settings {
    var environment: [String: String]
    var postgres: PostgresConfiguration
    var appleBaseURL: String

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
        self.postgres = PostgresConfiguration.fromEnvironment(environment)
        self.appleBaseURL = environment["SIWA_APPLE_BASE_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "https://appleid.apple.com"
    }

    func value(_ name: String) -> String? {
        guard let v = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else { return nil }
        return v
    }

    func require(_ name: String, flag: String? = nil, arguments: Arguments? = nil) throws -> String {
        if let flag, let v = arguments?.string(flag) {
            guard !v.trimmingCharacters(in: .whitespaces).isEmpty else { throw UsageError(message: "--\(flag) is empty") }
            return v
        }
        if let v = value(name) { return v }
        throw ConfigError(message: "\(name) is not set" + (flag.map { " (or pass --\($0))" } ?? ""))
    }

    /// The `.p8` key from `SIWA_KEY_FILE` (or `--key-file`) or `SIWA_PRIVATE_KEY`.
    func privateKey(arguments: Arguments? = nil) throws -> P256PrivateKey {
        let pem: String
        let source: String
        if arguments?.string("key-file") == nil, value("SIWA_KEY_FILE") != nil, environment["SIWA_PRIVATE_KEY"]?.isEmpty == false {
            throw ConfigError(message: "both SIWA_KEY_FILE and SIWA_PRIVATE_KEY are set: set only one")
        }
        if let path = arguments?.string("key-file") ?? value("SIWA_KEY_FILE") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(message: "key file '\(path)' cannot be read (SIWA_KEY_FILE / --key-file)")
            }
            pem = String(decoding: data, as: UTF8.self)
            source = "key file '\(path)'"
        } else if let inline = environment["SIWA_PRIVATE_KEY"], !inline.isEmpty {
            pem = inline
            source = "SIWA_PRIVATE_KEY"
        } else {
            throw ConfigError(message: "no .p8 key: set SIWA_KEY_FILE (a path) or SIWA_PRIVATE_KEY (the PEM)")
        }
        do {
            return try P256PrivateKey(pem: pem)
        } catch {
            throw ConfigError(message: "\(source) is not a usable Sign in with Apple key: \(error)")
        }
    }

    /// Team credentials from flags or `SIWA_TEAM_ID`, `SIWA_KEY_ID`, `SIWA_CLIENT_ID` and the key.
    func credentials(arguments: Arguments? = nil) throws -> AppleCredentials {
        let team = try require("SIWA_TEAM_ID", flag: "team-id", arguments: arguments)
        let kid = try require("SIWA_KEY_ID", flag: "key-id", arguments: arguments)
        let client = try require("SIWA_CLIENT_ID", flag: "client-id", arguments: arguments)
        let key = try privateKey(arguments: arguments)
        do {
            return try AppleCredentials(teamID: team, keyID: kid, clientID: client, privateKey: key)
        } catch {
            let names = ["teamID": "SIWA_TEAM_ID / --team-id", "keyID": "SIWA_KEY_ID / --key-id", "clientID": "SIWA_CLIENT_ID / --client-id"]
            throw ConfigError(message: "\(error.setting.map { names[$0] ?? $0 } ?? "credentials"): \(error.message)")
        }
    }

    /// Refresh-token encryption keys.
    func keyring() throws -> TokenKeyring {
        let keyID = value("SIWA_TOKEN_KEY_ID") ?? "k1"
        let encoded: String
        if let path = value("SIWA_TOKEN_KEY_FILE") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(message: "SIWA_TOKEN_KEY_FILE '\(path)' cannot be read")
            }
            encoded = String(decoding: data, as: UTF8.self)
        } else if let inline = value("SIWA_TOKEN_KEY") {
            encoded = inline
        } else {
            throw ConfigError(message: "no token encryption key: set SIWA_TOKEN_KEY_FILE or SIWA_TOKEN_KEY "
                + "(32 bytes as 64 hex chars or base64; `siwa-jobs keygen --token-key` makes one)")
        }
        let current: TokenCipher
        do { current = try TokenCipher(keyID: keyID, encodedKey: encoded) } catch {
            throw ConfigError(message: "SIWA_TOKEN_KEY: \(error)")
        }
        var previous: [TokenCipher] = []
        for entry in (value("SIWA_TOKEN_KEYS_PREVIOUS") ?? "").split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else {
                throw ConfigError(message: "SIWA_TOKEN_KEYS_PREVIOUS: expected id:key pairs separated by commas")
            }
            guard parts[0] != keyID, !previous.contains(where: { $0.keyID == parts[0] }) else {
                throw ConfigError(message: "SIWA_TOKEN_KEYS_PREVIOUS: key id '\(parts[0])' is listed twice (or equals SIWA_TOKEN_KEY_ID)")
            }
            do { previous.append(try TokenCipher(keyID: parts[0], encodedKey: parts[1])) } catch {
                throw ConfigError(message: "SIWA_TOKEN_KEYS_PREVIOUS key '\(parts[0])': \(error)")
            }
        }
        return TokenKeyring(current: current, previous: previous)
    }

    /// The Apple base URL, checked: an http(s) URL, and plain http only to a loopback host (the
    /// sandbox), so client secrets and tokens never travel unencrypted.
    func validatedAppleBaseURL() throws -> String {
        let url = appleBaseURL
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = parsed.host, !host.isEmpty else {
            throw ConfigError(message: "SIWA_APPLE_BASE_URL '\(url)' is not an http(s) URL")
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) || host.hasPrefix("127.")
        guard scheme == "https" || loopback else {
            throw ConfigError(message: "SIWA_APPLE_BASE_URL '\(url)' is plain http to a non-loopback host; use https")
        }
        return url
    }

    /// Checks SIWA_LOG_LEVEL and SIWA_LOG_FORMAT; a typo is named rather than ignored.
    func validateLogging() throws {
        if let level = value("SIWA_LOG_LEVEL"), !["debug", "info", "warning", "warn", "error"].contains(level.lowercased()) {
            throw ConfigError(message: "SIWA_LOG_LEVEL '\(level)' is not one of debug, info, warning, error")
        }
        if let format = value("SIWA_LOG_FORMAT"), !["json", "text"].contains(format.lowercased()) {
            throw ConfigError(message: "SIWA_LOG_FORMAT '\(format)' is not json or text")
        }
    }

    func logger(_ label: String) -> Logger {
        let level: Logger.Level = switch value("SIWA_LOG_LEVEL")?.lowercased() {
        case "debug": .debug
        case "warning", "warn": .warning
        case "error": .error
        default: .info
        }
        let json: Bool? = switch value("SIWA_LOG_FORMAT")?.lowercased() {
        case "json": true
        case "text": false
        default: nil
        }
        return Logger(label: label, minimum: level, json: json)
    }
}
