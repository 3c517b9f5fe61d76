import AppleID
import Foundation
import SIWACrypto
import Testing
import TestSupport
@testable import SIWAJobs

/// Pure rules of the transfer kinds: target checks, the window arithmetic, the email decision,
/// and the multi-team configuration file as the binary reads it.
@Suite(.timeLimit(.minutes(20))) struct TransferRulesTests {
    @Test func targetRules() throws {
        #expect(throws: Never.self) { try TransferTarget.validate("BBBBB22222", sender: "AAAAA11111") }
        for bad in ["", "bbbbb22222", "BBBBB2222", "BBBBB222222", "BBBBB 2222", "BBBBB2222É"] {
            #expect(throws: TransferRuleError.self) { try TransferTarget.validate(bad, sender: "AAAAA11111") }
        }
        #expect(throws: TransferRuleError.self) { try TransferTarget.validate("AAAAA11111", sender: "AAAAA11111") }
        #expect(throws: Never.self) { try TransferTarget.validateTeamID("AAAAA11111", field: "team-id") }
        for bad in ["aaaaa11111", "X", "", "AAAAA1111É", "AAAAA 1111"] {
            #expect(throws: TransferRuleError.self) { try TransferTarget.validateTeamID(bad, field: "source-team-id") }
        }
        do {
            try TransferTarget.validateTeamID("aaaaa11111", field: "source-team-id")
        } catch {
            #expect("\(error)".hasPrefix("source-team-id 'aaaaa11111' is not a 10-character Apple Team ID"))
        }
    }

    @Test func futureTransferDates() throws {
        let window = try TransferWindow(day: "2025-06-01")
        let day = { (d: String) in try #require(TransferWindow.parse(d)).addingTimeInterval(43_200) }   // noon UTC
        #expect(throws: Never.self) { try window.requireNotAhead(maxDaysAhead: 1, purpose: "an import", now: try day("2025-05-31")) }
        #expect(throws: Never.self) { try window.requireNotAhead(maxDaysAhead: 1, purpose: "an import", now: try day("2025-07-01")) }
        #expect(throws: TransferRuleError.self) { try window.requireNotAhead(maxDaysAhead: 1, purpose: "an import", now: try day("2025-05-30")) }
        #expect(throws: Never.self) { try window.requireNotAhead(maxDaysAhead: 60, purpose: "an export", now: try day("2025-04-02")) }
        do {
            try window.requireNotAhead(maxDaysAhead: 60, purpose: "an export", now: try day("2025-04-01"))
            Issue.record("61 days ahead should be refused")
        } catch {
            #expect("\(error)".hasPrefix("transfer_date 2025-06-01 is 61 days in the future: an export accepts at most 60 days ahead"))
        }
    }

    @Test func windowArithmetic() throws {
        let window = try TransferWindow(day: "2025-06-01")
        let day = { (d: String) in try #require(TransferWindow.parse(d)).addingTimeInterval(43_200) }   // noon UTC
        #expect(window.daysLeft(now: try day("2025-06-01")) == 60)
        #expect(window.daysLeft(now: try day("2025-07-31")) == 0)
        #expect(window.closesOn == "2025-07-31")
        #expect(throws: Never.self) { try window.requireOpen(now: try day("2025-07-31")) }
        #expect(window.daysLeft(now: try day("2025-08-01")) == -1)
        #expect(window.daysLeft(now: try day("2025-05-20")) == 72, "exports may run before the transfer")
        do {
            try window.requireOpen(now: try day("2025-08-01"))
            Issue.record("the window should be closed")
        } catch {
            #expect("\(error)".contains("closed on 2025-07-31") && "\(error)".contains("transfer the app back"))
        }
        for bad in ["2025-02-30", "2025-6-1", "01/06/2025", "", "2025-13-01"] {
            #expect(throws: TransferRuleError.self) { try TransferWindow(day: bad) }
        }
    }

    @Test func emailDecision() {
        let relay = MigratedUser(sub: "s", email: "new@privaterelay.appleid.com", isPrivateEmail: true)
        let none = MigratedUser(sub: "s", email: nil, isPrivateEmail: false)
        let rule = TransferImportHandler.emailChange
        #expect(rule("old@privaterelay.appleid.com", true, relay) == ("new@privaterelay.appleid.com", true, "relay_updated"))
        #expect(rule(nil, nil, relay) == ("new@privaterelay.appleid.com", true, "relay_new"))
        #expect(rule("new@privaterelay.appleid.com", true, relay) == ("new@privaterelay.appleid.com", true, "unchanged"))
        #expect(rule("me@example.com", false, none) == ("me@example.com", false, "kept_non_relay"))
        #expect(rule("old@privaterelay.appleid.com", true, none) == ("old@privaterelay.appleid.com", true, "kept_no_email"))
        #expect(rule(nil, nil, none) == (nil, false, "none"))
        // Apple sent an address without is_private_email: it is a relay address.
        #expect(rule(nil, nil, MigratedUser(sub: "s", email: "x@privaterelay.appleid.com", isPrivateEmail: nil)).1 == true)
    }

    @Test func aBrokenTeamsFileIsAConfigurationErrorNamingTheField() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("teams-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(String, String)] = [
            ("not json", "not valid JSON"),
            (#"[{"team_id":"AAAAA11111","key_id":"KEYAAAAA11","client_ids":["com.example.app"]}]"#, "missing field 'key_file'"),
            (#"{"teams":[{"team_id":"AAAAA11111","key_id":"KEYAAAAA11","key_file":"missing.p8","client_ids":["com.example.app"]}]}"#,
             "teams[0].key_file"),
            (#"[{"team_id":"AAAAA11111","key_id":"KEYAAAAA11","key_file":"k.p8","client_ids":[]}]"#, "teams[0].client_ids is empty"),
            ("[]", "lists no team"),
            (#"{"teams": []}"#, "lists no team"),
            (#"[{"team_id":"AAAAA11111","key_id":"KEYAAAAA11","key_file":"k.p8","client_ids":["com.example.app"]},"#
                + #"{"team_id":"BBBBB22222","key_id":"KEYBBBBB22","key_file":"k.p8","client_ids":["com.example.app"]},"#
                + #"{"team_id":"AAAAA11111","key_id":"KEYAAAAA12","key_file":"k.p8","client_ids":["com.example.app"]}]"#,
             "teams[2]: team AAAAA11111 with client 'com.example.app' is already listed in teams[0]"),
            (#"[{"team_id":"AAAAA11111","key_id":"KEYAAAAA11","key_file":"k.p8","client_ids":["com.example.app","com.example.app"]}]"#,
             "teams[0]: team AAAAA11111 with client 'com.example.app' is already listed in teams[0]"),
        ]
        try PrivateFile.write(try P256PrivateKey.generate().pkcs8PEM, to: dir.appendingPathComponent("k.p8").path)
        var env = ProcessInfo.processInfo.environment
        for name in ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE", "SIWA_PRIVATE_KEY", "DATABASE_URL"] {
            env.removeValue(forKey: name)
        }
        let db = try await TestDatabase.create()
        env["PGDATABASE"] = db.name
        for (index, (text, expected)) in cases.enumerated() {
            let path = dir.appendingPathComponent("teams\(index).json").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            env["SIWA_TEAMS_FILE"] = path
            let run = try await BinaryProcess.run(["work", "--drain"], environment: env)
            #expect(run.status == 78, "\(text): \(run.stderr)")
            #expect(run.stderr.contains("SIWA_TEAMS_FILE") && run.stderr.contains(expected), "\(run.stderr)")
            #expect(!run.stderr.contains("refresh-validation disabled"), "the teams file error comes first, alone: \(run.stderr)")
        }
        await db.drop()
    }
}
