import AppleID
import Clocks
import Foundation
import SIWACore
import SIWACrypto
import SIWAJobs
import Testing
import TestSupport

/// `SIWAConfiguration`: everything read from the environment, resolved without the binary.
@Suite struct ConfigurationTests {
    static let team = ["SIWA_TEAM_ID": "ABCDE12345", "SIWA_KEY_ID": "KEY1234567", "SIWA_CLIENT_ID": "com.example.app"]

    private func failure(_ body: () throws -> Any) -> String? { configurationFailure(body) }

    @Test func defaultsAndRequiredValues() throws {
        let c = SIWAConfiguration(environment: ["SIWA_TEAM_ID": "  ABCDE12345 \n", "SIWA_KEY_ID": "   ", "USER": "ops"])
        #expect(c.appleBaseURL == "https://appleid.apple.com")
        #expect(c.postgres.conninfo == "")
        #expect(c.value("SIWA_TEAM_ID") == "ABCDE12345")
        #expect(c.value("SIWA_KEY_ID") == nil, "blank is unset")
        #expect(c.operatorName == "ops")
        #expect(SIWAConfiguration(environment: [:]).operatorName == "cli")
        #expect(try c.require("SIWA_TEAM_ID") == "ABCDE12345")
        #expect(try c.require("SIWA_TEAM_ID", override: "FLAG000000", flag: "team-id") == "FLAG000000")
        #expect(failure { try c.require("SIWA_CLIENT_ID", flag: "client-id") } == "SIWA_CLIENT_ID is not set (or pass --client-id)")
        #expect(failure { try c.require("SIWA_CLIENT_ID") } == "SIWA_CLIENT_ID is not set")
        #expect(c.hasSingleTeamCredentials)
        #expect(!SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": "/x"]).hasSingleTeamCredentials)
    }

    @Test func databaseURL() {
        #expect(failure { try SIWAConfiguration(environment: ["DATABASE_URL": "postgres://u:s3cret@[bad/x"]).validateDatabaseURL() }
            == "DATABASE_URL is neither a postgres:// URI nor a key=value conninfo string")
        #expect(failure { try SIWAConfiguration(environment: ["DATABASE_URL": "host=db dbname=siwa"]).validateDatabaseURL() } == nil)
    }

    @Test(arguments: [
        ("https://appleid.apple.com", nil),
        ("http://127.0.0.1:8080", nil),
        ("http://127.9.8.7:1", nil),
        ("http://[::1]:8080", nil),
        ("http://192.0.2.1", "SIWA_APPLE_BASE_URL 'http://192.0.2.1' is plain http to a host that is not a loopback address "
            + "(127.0.0.0/8 or [::1]; names such as localhost do not count); use https"),
        ("http://127.evil.example.com", "SIWA_APPLE_BASE_URL 'http://127.evil.example.com' is plain http to a host that is not "
            + "a loopback address (127.0.0.0/8 or [::1]; names such as localhost do not count); use https"),
        ("http://localhost:1", "SIWA_APPLE_BASE_URL 'http://localhost:1' is plain http to a host that is not "
            + "a loopback address (127.0.0.0/8 or [::1]; names such as localhost do not count); use https"),
        ("ftp://example.com", "SIWA_APPLE_BASE_URL 'ftp://example.com' is not an http(s) URL with a host and a port from 1 to 65535"),
        ("http://127.0.0.1:99999", "SIWA_APPLE_BASE_URL 'http://127.0.0.1:99999' is not an http(s) URL with a host and a port from "
            + "1 to 65535"),
        ("https://u:s3cret#@example.com", "SIWA_APPLE_BASE_URL 'https://***@example.com' holds a user name or password: give the "
            + "base URL without them"),
    ] as [(String, String?)])
    func appleBaseURL(_ url: String, _ expected: String?) {
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_APPLE_BASE_URL": url]).validatedAppleBaseURL() } == expected)
    }

    /// Values quoted in messages: control characters escaped, at most 60 characters.
    @Test func printableValues() {
        #expect(IdentifierFormat.printable("com.example.app") == "com.example.app")
        #expect(IdentifierFormat.printable("a\nb\u{1B}[31m") == "a\\nb\\u{1B}[31m")
        #expect(IdentifierFormat.printable(String(repeating: "x", count: 100)) == String(repeating: "x", count: 60) + "... (100 characters)")
        // Format characters reorder or hide text on a terminal: a right-to-left override, a
        // zero-width space, a byte-order mark are escaped too; other non-ASCII text is kept.
        #expect(IdentifierFormat.printable("\u{202E}com.evil\u{200B}\u{FEFF}é") == "\\u{202E}com.evil\\u{200B}\\u{FEFF}é")
        #expect(PrintableText.quotedPath("/tmp/a\nb") == "'/tmp/a\\nb'")
        #expect(PrintableText.quotedPath("/" + String(repeating: "p", count: 299))
            == "'/" + String(repeating: "p", count: 255) + "'... (300 characters)")
    }

    @Test func logging() {
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_LOG_LEVEL": "WARN", "SIWA_LOG_FORMAT": "text"]).validateLogging() } == nil)
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_LOG_LEVEL": "loud"]).validateLogging() }
            == "SIWA_LOG_LEVEL 'loud' is not one of debug, info, warning, error")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_LOG_FORMAT": "xml"]).validateLogging() }
            == "SIWA_LOG_FORMAT 'xml' is not json or text")
        #expect(SIWAConfiguration(environment: ["SIWA_LOG_LEVEL": "error"]).logger("t", clock: SystemClock()).minimum == .error)
    }

    @Test func tokenKeys() throws {
        let hex = Hex.encode(SecureRandom.bytes(32)), other = Hex.encode(SecureRandom.bytes(32))
        let ring = try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": hex, "SIWA_TOKEN_KEYS_PREVIOUS": "k0:\(other)"]).keyring()
        #expect(ring.current.keyID == "k1" && ring.knows(keyID: "k0"))
        #expect(failure { try SIWAConfiguration(environment: [:]).keyring() }?.hasPrefix("no token encryption key") == true)
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": "short"]).keyring() }?.hasPrefix("SIWA_TOKEN_KEY: ") == true)
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": hex, "SIWA_TOKEN_KEYS_PREVIOUS": "nocolon"]).keyring() }
            == "SIWA_TOKEN_KEYS_PREVIOUS: expected id:key pairs separated by commas")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": hex, "SIWA_TOKEN_KEYS_PREVIOUS": "k1:\(other)"]).keyring() }
            == "SIWA_TOKEN_KEYS_PREVIOUS: key id 'k1' is listed twice (or equals SIWA_TOKEN_KEY_ID)")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY_FILE": "/nonexistent/key"]).keyring() }
            == "SIWA_TOKEN_KEY_FILE '/nonexistent/key' cannot be read: no such file or directory")
        #expect(!(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": hex]).keyring() } ?? "").contains(hex))
    }

    @Test func singleTeamCredentials() throws {
        let dir = try TemporaryDirectory()
        let key = try P256PrivateKey.generate()
        let path = try dir.write("AuthKey.p8", key.pkcs8PEM)
        var env = Self.team
        env["SIWA_KEY_FILE"] = path
        let c = try SIWAConfiguration(environment: env).credentials()
        #expect(c.teamID == "ABCDE12345" && c.keyID == "KEY1234567" && c.clientID == "com.example.app")
        let inline = try SIWAConfiguration(environment: Self.team.merging(["SIWA_PRIVATE_KEY": key.pkcs8PEM]) { $1 }).credentials()
        #expect(inline.keyID == "KEY1234567")
        let flagged = try SIWAConfiguration(environment: [:]).credentials(flags: CredentialFlags(
            teamID: "ZZZZZ99999", keyID: "KEY7654321", clientID: "com.example.other", keyFile: path))
        #expect(flagged.teamID == "ZZZZZ99999" && flagged.clientID == "com.example.other")

        #expect(failure { try SIWAConfiguration(environment: env.merging(["SIWA_PRIVATE_KEY": key.pkcs8PEM]) { $1 }).credentials() }
            == "both SIWA_KEY_FILE and SIWA_PRIVATE_KEY are set: set only one")
        #expect(failure { try SIWAConfiguration(environment: Self.team).credentials() }
            == "no .p8 key: set SIWA_KEY_FILE (a path) or SIWA_PRIVATE_KEY (the PEM)")
        #expect(failure { try SIWAConfiguration(environment: [:]).credentials(flags: CredentialFlags()) }
            == "SIWA_TEAM_ID is not set (or pass --team-id)")
        let garbage = try dir.write("bad.p8", "not a key")
        #expect(failure { try SIWAConfiguration(environment: Self.team.merging(["SIWA_KEY_FILE": garbage]) { $1 }).credentials() }?
            .hasPrefix("key file '\(garbage)' is not a usable Sign in with Apple key") == true)
        #expect(failure { try SIWAConfiguration(environment: env.merging(["SIWA_TEAM_ID": "short"]) { $1 }).credentials() }?
            .hasPrefix("SIWA_TEAM_ID 'short' is not a team ID") == true)
    }

    @Test func teamsFileAndTheOneRegistry() throws {
        let dir = try TemporaryDirectory()
        let keyA = try P256PrivateKey.generate(), keyB = try P256PrivateKey.generate()
        _ = try dir.write("a.p8", keyA.pkcs8PEM)
        _ = try dir.write("b.p8", keyB.pkcs8PEM)
        let file = try dir.write("teams.json", """
            {"teams": [{"team_id": "AAAAA11111", "key_id": "KEYA111111", "key_file": "a.p8", "client_ids": ["com.example.app"]},
                       {"team_id": "BBBBB22222", "key_id": "KEYB222222", "key_file": "b.p8",
                        "client_ids": ["com.example.app", "com.example.web"]}]}
            """)
        var env = ["SIWA_TEAMS_FILE": file]
        let all = try SIWAConfiguration(environment: env).allCredentials()
        #expect(all.map { "\($0.teamID) \($0.clientID)" } == ["AAAAA11111 com.example.app", "BBBBB22222 com.example.app",
                                                              "BBBBB22222 com.example.web"])
        // The single team joins, unless the file already lists that team and client (with the same
        // key; a conflicting one is refused: ConfigurationMessagesTests).
        env["SIWA_TEAM_ID"] = "AAAAA11111"
        env["SIWA_KEY_ID"] = "KEYA111111"
        env["SIWA_CLIENT_ID"] = "com.example.app"
        env["SIWA_PRIVATE_KEY"] = keyA.pkcs8PEM
        let merged = try SIWAConfiguration(environment: env).allCredentials()
        #expect(merged.count == 3 && merged[0].keyID == "KEYA111111", "listed once")
        env["SIWA_CLIENT_ID"] = "com.example.ios"
        #expect(try SIWAConfiguration(environment: env).allCredentials().count == 4)
        let registry = try SIWAConfiguration(environment: env.merging(["SIWA_APPLE_BASE_URL": "http://127.0.0.1:9"]) { $1 })
            .appleClientRegistry(transport: ScriptedNothing(), clock: SystemClock())
        #expect(registry.client(teamID: "BBBBB22222", clientID: "com.example.web") != nil)
        #expect(registry.client(teamID: "AAAAA11111", clientID: "com.example.ios") != nil)
        #expect(try SIWAConfiguration(environment: [:]).appleClientRegistry(transport: ScriptedNothing(), clock: SystemClock()).isEmpty)
    }

    @Test func teamsFileErrorsNameTheEntryAndField() throws {
        let dir = try TemporaryDirectory()
        let key = try P256PrivateKey.generate()
        _ = try dir.write("a.p8", key.pkcs8PEM)
        func error(_ json: String) throws -> String? {
            let path = try dir.write("teams-\(UUID().uuidString).json", json)
            return failure { try SIWAConfiguration(environment: [:]).teamsFile(path) }
        }
        let entry = #"{"team_id": "AAAAA11111", "key_id": "KEYA111111", "key_file": "a.p8", "client_ids": ["com.example.app"]}"#
        #expect(try error("[]")?.hasSuffix("lists no team: add at least one entry, or unset SIWA_TEAMS_FILE") == true)
        #expect(try error("[\(entry), \(entry)]") == "SIWA_TEAMS_FILE teams[1]: team AAAAA11111 with client 'com.example.app' "
            + "is already listed in teams[0]: list each team and client once")
        #expect(try error(#"[{"team_id": "AAAAA11111", "key_id": "K", "key_file": "missing.p8", "client_ids": ["c"]}]"#)?
            .hasPrefix("SIWA_TEAMS_FILE teams[0].key_file '") == true)
        #expect(try error(#"[{"team_id": "AAAAA11111", "key_id": "KEYA111111", "key_file": "a.p8", "client_ids": []}]"#)
            == "SIWA_TEAMS_FILE teams[0].client_ids is empty")
        #expect(try error(#"[{"team_id": "AAAAA11111"}]"#)?.hasSuffix("(teams[0]: missing field 'key_id')") == true)
        #expect(try error("{not json")?.hasSuffix("(not valid JSON)") == true)
        #expect(failure { try SIWAConfiguration(environment: [:]).teamsFile("/nonexistent/teams.json") }
            == "SIWA_TEAMS_FILE '/nonexistent/teams.json' cannot be read: no such file or directory")
    }

    @Test func notificationSettingsAndJobTargets() throws {
        let c = SIWAConfiguration(environment: ["SIWA_NOTIFICATION_CLIENT_IDS": " com.example.web, ,com.example.app ",
                                                "SIWA_JWKS_REFETCH_SECONDS": "2.5"])
        #expect(try c.notificationClientIDs(primary: "com.example.app") == ["com.example.app", "com.example.web"])
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_NOTIFICATION_CLIENT_IDS": "com.example.web, com.x\u{1B}[31m"])
            .notificationClientIDs(primary: "com.example.app") }
            == "SIWA_NOTIFICATION_CLIENT_IDS: 'com.x\\u{1B}[31m' is not a client ID (App ID or Services ID: printable ASCII "
                + "without spaces, e.g. com.example.web)")
        #expect(try c.jwksRefetchInterval() == .milliseconds(2500))
        #expect(try SIWAConfiguration(environment: [:]).jwksRefetchInterval() == .seconds(60))
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_JWKS_REFETCH_SECONDS": "9999"]).jwksRefetchInterval() }
            == "SIWA_JWKS_REFETCH_SECONDS: expected seconds from 0 to 3600, got '9999'")
        let env = SIWAConfiguration(environment: Self.team)
        #expect(try env.jobTarget(teamID: nil, clientID: nil) == ("ABCDE12345", "com.example.app"))
        #expect(failure { try env.jobTarget(teamID: "abc", clientID: nil) }
            == "SIWA_TEAM_ID / --team-id 'abc' is not a team ID: expected 10 characters A-Z and 0-9")
        let shape = "is not a client ID (App ID or Services ID: printable ASCII without spaces, e.g. com.example.app)"
        #expect(failure { try env.jobTarget(teamID: nil, clientID: "ABCDE12345") } == "SIWA_CLIENT_ID / --client-id 'ABCDE12345' \(shape)")
        #expect(failure { try env.jobTarget(teamID: nil, clientID: "com.x\u{1B}[31m\nred") }
            == "SIWA_CLIENT_ID / --client-id 'com.x\\u{1B}[31m\\nred' \(shape)")
        #expect(failure { try env.jobTarget(teamID: nil, clientID: "com.exämple") } == "SIWA_CLIENT_ID / --client-id 'com.exämple' \(shape)")
    }
}

/// A transport that is never called (building a registry makes no request).
struct ScriptedNothing: HTTPTransport {
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        throw TransportError(kind: .other, message: "not expected")
    }
}

/// A directory removed when the value is.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `text` to `name` and returns the path.
    func write(_ name: String, _ text: String) throws -> String {
        let file = url.appendingPathComponent(name).path
        try PrivateFile.write(text, to: file)
        return file
    }
}
