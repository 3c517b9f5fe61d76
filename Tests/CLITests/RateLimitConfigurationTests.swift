import Foundation
import SIWACore
import SIWACrypto
import SIWAJobs
import Testing

/// The Apple rate ceilings: `SIWA_APPLE_RATE_LIMIT` for every team, the teams file's
/// `rate_limit_rps` per team, 0 = unlimited (no budget at all).
@Suite struct RateLimitConfigurationTests {
    private func failure(_ body: () throws -> Any) -> String? { configurationFailure(body) }

    /// A teams file of `entries` (each `team_id` plus extra JSON members), all with one key.
    func teamsFile(_ entries: [(team: String, extra: String)]) throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        _ = try dir.write("k.p8", try P256PrivateKey.generate().pkcs8PEM)
        let list = entries.enumerated().map { index, entry in
            #"{"team_id": "\#(entry.team)", "key_id": "KEY\#(index)000000", "key_file": "k.p8", "client_ids": ["com.example.c\#(index)"]\#(entry.extra)}"#
        }
        return (dir, try dir.write("teams.json", "[" + list.joined(separator: ",") + "]"))
    }

    @Test func theEnvironmentDefaultIsRequestsPerSecondAndZeroOrOffIsUnlimited() throws {
        func limit(_ text: String?) throws -> Double {
            try SIWAConfiguration(environment: text.map { ["SIWA_APPLE_RATE_LIMIT": $0] } ?? [:]).defaultAppleRateLimit()
        }
        #expect(try limit(nil) == 0)
        #expect(try limit("0") == 0)
        #expect(try limit("off") == 0)
        #expect(try limit(" 250 ") == 250)
        #expect(try limit("0.5") == 0.5)
        for bad in ["-1", "fast", "1e9", "nan"] {
            #expect(failure { try SIWAConfiguration(environment: ["SIWA_APPLE_RATE_LIMIT": bad]).defaultAppleRateLimit() }
                == "SIWA_APPLE_RATE_LIMIT: expected requests per second from 0 to 100000 (0 or off: unlimited), got '\(bad)'")
        }
    }

    @Test func theTeamsFileGivesEachTeamItsCeilingOverTheDefault() throws {
        let (dir, path) = try teamsFile([("AAAAA11111", #", "rate_limit_rps": 400"#), ("BBBBB22222", ""),
                                         ("CCCCC33333", #", "rate_limit_rps": 0"#), ("AAAAA11111", "")])
        _ = dir
        let withDefault = SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": path, "SIWA_APPLE_RATE_LIMIT": "50"])
        #expect(try withDefault.appleRateCeilings() == ["AAAAA11111": 400, "BBBBB22222": 50])
        let noDefault = SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": path])
        #expect(try noDefault.appleRateCeilings() == ["AAAAA11111": 400])
        // The single team takes the default.
        let single = SIWAConfiguration(environment: ["SIWA_TEAM_ID": "DDDDD44444", "SIWA_KEY_ID": "KEYD444444",
                                                     "SIWA_CLIENT_ID": "com.example.app",
                                                     "SIWA_PRIVATE_KEY": try P256PrivateKey.generate().pkcs8PEM,
                                                     "SIWA_APPLE_RATE_LIMIT": "7.5"])
        #expect(try single.appleRateCeilings() == ["DDDDD44444": 7.5])
    }

    @Test func badOrConflictingTeamCeilingsNameTheEntry() throws {
        let (d1, negative) = try teamsFile([("AAAAA11111", #", "rate_limit_rps": -3"#)])
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": negative]).appleRateCeilings() }
            == "SIWA_TEAMS_FILE teams[0].rate_limit_rps: expected requests per second from 0 to 100000 (0: unlimited), got -3.0")
        let (d2, twice) = try teamsFile([("AAAAA11111", #", "rate_limit_rps": 100"#), ("AAAAA11111", #", "rate_limit_rps": 200"#)])
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": twice]).appleRateCeilings() }
            == "SIWA_TEAMS_FILE teams[1].rate_limit_rps: 200.0 for team AAAAA11111, but teams[0] gives 100.0: give one ceiling per team")
        let (d3, text) = try teamsFile([("AAAAA11111", #", "rate_limit_rps": "fast""#)])
        #expect(failure { try SIWAConfiguration(environment: ["SIWA_TEAMS_FILE": text]).appleRateCeilings() }?
            .hasSuffix("(teams[0].rate_limit_rps: expected a number)") == true)
        _ = (d1, d2, d3)
    }
}
