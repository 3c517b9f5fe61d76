import Foundation
import SIWACore
import SIWACrypto
@testable import SIWAJobs
import Testing
@testable import siwa_jobs

/// Issue 8 item 11: configuration messages say what is wrong in the operator's terms.
@Suite struct ConfigurationMessagesTests {
    private func failure(_ body: () throws -> Any) -> String? { configurationFailure(body) }

    @Test func aHexTokenKeyOfTheWrongLengthIsDescribedInHex() throws {
        let hex = Hex.encode(SecureRandom.bytes(32))
        let short = String(hex.dropLast(2))
        let message = failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": short]).keyring() }
        #expect(message == "SIWA_TOKEN_KEY: the token encryption key looks like hex but has 62 hex digits (31 bytes); a key is "
            + "64 hex digits (32 bytes), or base64 of 32 bytes: `siwa-jobs keygen --token-key` makes one")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": String(hex.dropLast())]).keyring() }?
            .contains("has 63 hex digits (an odd number of digits)") == true)
        let previous = failure {
            try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": hex, "SIWA_TOKEN_KEYS_PREVIOUS": "k0:\(hex)00"]).keyring()
        }
        #expect(previous?.hasPrefix("SIWA_TOKEN_KEYS_PREVIOUS key 'k0': the token encryption key looks like hex but has 66") == true)
        // Base64 of the wrong length keeps its base64 wording; no message echoes the key.
        let base64 = Data(SecureRandom.bytes(20)).base64EncodedString()
        let b64 = failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY": base64]).keyring() } ?? ""
        #expect(b64.contains("32 bytes (got 20)") && !b64.contains("hex digits") && !b64.contains(base64), "\(b64)")
        #expect(!(message ?? "").contains(short))
    }

    @Test func unreadableFilesSayWhy() throws {
        let dir = try TemporaryDirectory()
        let team = ["SIWA_TEAM_ID": "ABCDE12345", "SIWA_KEY_ID": "KEY1234567", "SIWA_CLIENT_ID": "com.example.app"]
        let directory = dir.url.path
        #expect(failure { try SIWAConfiguration(environment: team.merging(["SIWA_KEY_FILE": "/nonexistent/k.p8"]) { $1 }).credentials() }
            == "key file '/nonexistent/k.p8' cannot be read: no such file or directory (SIWA_KEY_FILE / --key-file)")
        #expect(failure { try SIWAConfiguration(environment: team.merging(["SIWA_KEY_FILE": directory]) { $1 }).credentials() }
            == "key file '\(directory)' cannot be read: is a directory (SIWA_KEY_FILE / --key-file)")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": directory]).allCredentials() }
            == "SIWA_TEAMS_FILE '\(directory)' cannot be read: is a directory")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TOKEN_KEY_FILE": directory]).keyring() }
            == "SIWA_TOKEN_KEY_FILE '\(directory)' cannot be read: is a directory")
        let teams = try dir.write("teams.json", #"[{"team_id": "AAAAA11111", "key_id": "KEYA111111", "key_file": "nope.p8", "client_ids": ["com.example.app"]}]"#)
        #expect(failure { try SIWAConfiguration(environment: [:]).teamsFile(teams) }
            == "SIWA_TEAMS_FILE teams[0].key_file '\(dir.url.appendingPathComponent("nope.p8").path)' cannot be read: no such file or directory")
        #expect(InputFileError(path: "/etc/k.p8", errno: EACCES).description == "'/etc/k.p8' cannot be read: permission denied")
        #expect(InputFileError(path: "/x", errno: EIO).reasonText == "input/output error")
        if getuid() != 0 {   // root reads any file
            let locked = try dir.write("locked.p8", "x")
            chmod(locked, 0)
            #expect(failure { try SIWAConfiguration(environment: team.merging(["SIWA_KEY_FILE": locked]) { $1 }).credentials() }?
                .contains("cannot be read: permission denied") == true)
        }
        // A readable file reads, through the same path.
        let text = try dir.write("t.txt", "hello")
        #expect(try InputFile.read(text) == Array("hello".utf8))
        #expect(throws: InputFileError(path: text, reason: .tooLarge(limit: 2))) { try InputFile.read(text, limit: 2) }
    }

    @Test func teamsFileErrorsNameTheEntryAndFieldNeverSwiftIndexes() throws {
        let dir = try TemporaryDirectory()
        func error(_ json: String) throws -> String {
            let path = try dir.write("teams-\(UUID().uuidString).json", json)
            return failure { try SIWAConfiguration(environment: [:]).teamsFile(path) } ?? "accepted"
        }
        let cases: [(String, String)] = [
            (#"[{"team_id": "AAAAA11111", "key_id": "K", "key_file": "k.p8", "client_ids": ["a"]}, {"team_id": "B"}]"#,
             "(teams[1]: missing field 'key_id')"),
            (#"{"teams": [{"team_id": "AAAAA11111", "key_id": "K", "key_file": "k.p8", "client_ids": "com.example.app"}]}"#,
             "(teams[0].client_ids: expected a list of strings)"),
            (#"{"teams": [{"team_id": 7, "key_id": "K", "key_file": "k.p8", "client_ids": []}]}"#, "(teams[0].team_id: expected a string)"),
            (#"{"teams": [{"team_id": "A", "key_id": "K", "key_file": "k.p8", "client_ids": [1]}]}"#,
             "(teams[0].client_ids[0]: expected a string)"),
            (#"{"teams": {"team_id": "A"}}"#, "(teams: expected a list of team entries)"),
            (#"{"team": []}"#, "(the top level: missing field 'teams')"),
        ]
        for (json, expected) in cases {
            let message = try error(json)
            #expect(message.hasSuffix(expected), "\(json): \(message)")
            #expect(!message.contains("Index"), "\(message)")
        }
    }

    @Test func aTeamsFileKeyThatConflictsWithTheSingleTeamVariablesIsRefused() throws {
        let dir = try TemporaryDirectory()
        let keyA = try P256PrivateKey.generate(), other = try P256PrivateKey.generate()
        _ = try dir.write("a.p8", keyA.pkcs8PEM)
        let file = try dir.write("teams.json", """
            [{"team_id": "AAAAA11111", "key_id": "KEYA111111", "key_file": "a.p8", "client_ids": ["com.example.app"]}]
            """)
        let base = ["SIWA_TEAMS_FILE": file, "SIWA_TEAM_ID": "AAAAA11111", "SIWA_CLIENT_ID": "com.example.app"]
        func all(_ env: [String: String]) -> String? { failure { try SIWAConfiguration(environment: base.merging(env) { $1 }).allCredentials() } }
        #expect(all(["SIWA_KEY_ID": "KEYA999999", "SIWA_PRIVATE_KEY": other.pkcs8PEM])
            == "SIWA_KEY_ID: KEYA999999 conflicts with SIWA_TEAMS_FILE teams[0], which uses key KEYA111111 for team AAAAA11111 "
                + "and client 'com.example.app': list each of the team's keys in SIWA_TEAMS_FILE and unset SIWA_KEY_ID and "
                + "SIWA_KEY_FILE / SIWA_PRIVATE_KEY, or make them match")
        #expect(all(["SIWA_KEY_ID": "KEYA111111", "SIWA_PRIVATE_KEY": other.pkcs8PEM])?
            .hasPrefix("SIWA_KEY_FILE: the key of SIWA_KEY_FILE / SIWA_PRIVATE_KEY is not the key_file of SIWA_TEAMS_FILE teams[0]") == true)
        #expect(all(["SIWA_KEY_ID": "KEYA999999", "SIWA_PRIVATE_KEY": other.pkcs8PEM, "SIWA_CLIENT_ID": "com.example.web"])?
            .hasPrefix("SIWA_KEY_ID: KEYA999999 is not a key SIWA_TEAMS_FILE lists for team AAAAA11111 (it lists KEYA111111)") == true)
        // Agreeing settings are fine: the same key for another client joins, for the same client it is listed once.
        let same = SIWAConfiguration(environment: base.merging(["SIWA_KEY_ID": "KEYA111111", "SIWA_PRIVATE_KEY": keyA.pkcs8PEM]) { $1 })
        #expect(try same.allCredentials().count == 1)
        let web = SIWAConfiguration(environment: base.merging(["SIWA_KEY_ID": "KEYA111111", "SIWA_PRIVATE_KEY": keyA.pkcs8PEM,
                                                                   "SIWA_CLIENT_ID": "com.example.web"]) { $1 })
        #expect(try web.allCredentials().map(\.clientID) == ["com.example.app", "com.example.web"])
        // Another team in the variables does not meet the file's entries.
        let b = SIWAConfiguration(environment: base.merging(["SIWA_TEAM_ID": "BBBBB22222", "SIWA_KEY_ID": "KEYB999999",
                                                                 "SIWA_PRIVATE_KEY": other.pkcs8PEM]) { $1 })
        #expect(try b.allCredentials().count == 2)
    }

    @Test func safetyStopSettings() throws {
        #expect(SafetyStopRule(parsing: "off") == .off && SafetyStopRule(parsing: "0") == .off)
        #expect(SafetyStopRule(parsing: "75%")?.thresholdPercent == 75 && SafetyStopRule(parsing: " 50 ")?.thresholdPercent == 50)
        #expect(SafetyStopRule(parsing: "100") == nil && SafetyStopRule(parsing: "-1") == nil && SafetyStopRule(parsing: "half") == nil)
        #expect(try SIWAConfiguration(environment: [:]).safetyStopRule(flag: nil) == SafetyStopRule())
        #expect(try SIWAConfiguration(environment: ["SIWA_SAFETY_STOP_PERCENT": "off"]).safetyStopRule(flag: nil) == .off)
        #expect(try SIWAConfiguration(environment: ["SIWA_SAFETY_STOP_PERCENT": "off"])
            .safetyStopRule(flag: SafetyStopRule(thresholdPercent: 30)).thresholdPercent == 30, "the flag wins")
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_SAFETY_STOP_PERCENT": "x"]).safetyStopRule(flag: nil) }
            == "SIWA_SAFETY_STOP_PERCENT: expected a percentage from 0 to 99, or off, got 'x'")
        #expect(SafetyStopRule().summary == "pauses the job if more than 50% of the first 200 results are invalid_grant")
    }
}

/// The exit codes of this change's errors (ExitCode.swift decides them).
@Suite struct MessageExitCodeTests {
    @Test func aLikelyTypoIs65AnUnreadableFile66() {
        let typo = ExitCode.of(EnqueueError(message: "team 'X' has no account at all", reason: .likelyTypo), database: "")
        #expect(typo.code == .dataError && typo.lines == ["refused: team 'X' has no account at all"])
        #expect(ExitCode.of(EnqueueError(message: "already active"), database: "").code == .failure, "transfers still refuse")
        let file = ExitCode.of(InputFileError(path: "/tmp", reason: .isDirectory), database: "")
        #expect(file.code == .noInput && file.lines == ["'/tmp' cannot be read: is a directory"])
    }
}

/// The description of the `ConfigurationError` `body` throws; nil when it succeeds.
func configurationFailure(_ body: () throws -> Any) -> String? {
    do {
        _ = try body()
        return nil
    } catch let error as ConfigurationError {
        return error.description
    } catch {
        return "not a ConfigurationError: \(error)"
    }
}
