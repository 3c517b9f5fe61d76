import AppleID
import Foundation
import SIWACore

extension SIWAConfiguration {
    /// The largest ceiling accepted, requests/s.
    public static let maximumAppleRateLimit: Double = 100_000

    /// `SIWA_APPLE_RATE_LIMIT`: the default Apple rate ceiling of every team, requests/s per
    /// endpoint (`/auth/token`, `/auth/revoke`, `/auth/usermigrationinfo`) summed over every
    /// worker process of the team; decimals allowed. Unset, `0` or `off`: unlimited.
    /// - Throws: `ConfigurationError` naming the variable for anything else than 0...100000.
    public func defaultAppleRateLimit() throws(ConfigurationError) -> Double {
        guard let text = value("SIWA_APPLE_RATE_LIMIT") else { return 0 }
        if text.lowercased() == "off" { return 0 }
        guard let rate = Self.rateLimit(text) else {
            throw ConfigurationError("expected requests per second from 0 to 100000 (0 or off: unlimited), got '\(text)'",
                                     setting: "SIWA_APPLE_RATE_LIMIT")
        }
        return rate
    }

    /// The rate ceiling of every configured team (`allCredentials()`) that has one, requests/s:
    /// the teams file's `rate_limit_rps` for a team it gives one (every entry of the team that
    /// gives one must give the same), else `SIWA_APPLE_RATE_LIMIT`. Teams at 0 are unlimited and
    /// left out: their calls never wait and never touch the database.
    /// - Throws: `ConfigurationError`: the credentials' errors first, then a bad
    ///   `SIWA_APPLE_RATE_LIMIT`, a `rate_limit_rps` out of range, or two different ones for one team.
    public func appleRateCeilings() throws(ConfigurationError) -> [String: Double] {
        let teams = Set(try allCredentials().map(\.teamID))
        let fallback = try defaultAppleRateLimit()
        var given: [String: (rate: Double, index: Int)] = [:]
        if let path = teamsFilePath {
            for (index, entry) in try Self.decodeTeamsFile(path).enumerated() {
                guard let rate = entry.rate_limit_rps else { continue }
                let at = "SIWA_TEAMS_FILE teams[\(index)].rate_limit_rps"
                guard rate.isFinite, (0...Self.maximumAppleRateLimit).contains(rate) else {
                    throw ConfigurationError("\(at): expected requests per second from 0 to 100000 (0: unlimited), got \(rate)")
                }
                if let earlier = given[entry.team_id], earlier.rate != rate {
                    throw ConfigurationError("\(at): \(rate) for team \(entry.team_id), but teams[\(earlier.index)] gives "
                        + "\(earlier.rate): give one ceiling per team")
                }
                given[entry.team_id] = (rate, index)
            }
        }
        var ceilings: [String: Double] = [:]
        for team in teams {
            let rate = given[team]?.rate ?? fallback
            if rate > 0 { ceilings[team] = rate }
        }
        return ceilings
    }

    /// `text` as requests/s in 0...100000, or nil.
    static func rateLimit(_ text: String) -> Double? {
        guard let rate = Double(text), rate.isFinite, (0...maximumAppleRateLimit).contains(rate) else { return nil }
        return rate
    }
}
