import AppleID
import Foundation
import SIWACore
import SIWACrypto

extension SIWAConfiguration {
    /// `SIWA_TEAMS_FILE`, when set.
    public var teamsFilePath: String? { value("SIWA_TEAMS_FILE") }

    /// Credentials of every configured team and client, for the one Apple client registry of a
    /// process (transfers work across teams: export on the sending team, import on the recipient):
    ///
    /// - `SIWA_TEAMS_FILE` first (see `teamsFile(_:)`),
    /// - then the single team of `SIWA_TEAM_ID`, `SIWA_KEY_ID`, `SIWA_CLIENT_ID` and
    ///   `SIWA_KEY_FILE`/`SIWA_PRIVATE_KEY` when any of those is set, unless the teams file
    ///   already lists that team and client (the file's entry is kept).
    ///
    /// - Throws: `ConfigurationError`: the teams file's (checked first), then the single team's.
    public func allCredentials() throws(ConfigurationError) -> [AppleCredentials] {
        var all: [AppleCredentials] = []
        if let path = teamsFilePath { all += try teamsFile(path) }
        if hasSingleTeamCredentials {
            let single = try credentials()
            if !all.contains(where: { $0.teamID == single.teamID && $0.clientID == single.clientID }) { all.append(single) }
        }
        return all
    }

    /// The credentials of the teams file at `path`, one per team and client. The file is a JSON
    /// array, or `{"teams": [...]}`, of `{"team_id": "ABCDE12345", "key_id": "KEY1234567",
    /// "key_file": "/path/AuthKey_KEY1234567.p8", "client_ids": ["com.example.app"]}`; a relative
    /// `key_file` is resolved against the file's directory.
    /// - Throws: `ConfigurationError` naming the file, the entry index and the field: an
    ///   unreadable or malformed file, an empty list, a key file that cannot be read or is not a
    ///   P-256 key, a malformed ID, a team and client listed twice.
    public func teamsFile(_ path: String) throws(ConfigurationError) -> [AppleCredentials] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("SIWA_TEAMS_FILE '\(path)' cannot be read")
        }
        let entries: [TeamEntry]
        do {
            if data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "[") {
                entries = try JSONDecoder().decode([TeamEntry].self, from: data)
            } else {
                entries = try JSONDecoder().decode(TeamEntry.Wrapped.self, from: data).teams
            }
        } catch {
            throw ConfigurationError("SIWA_TEAMS_FILE '\(path)': expected [{\"team_id\", \"key_id\", \"key_file\", "
                + "\"client_ids\": [...]}] or {\"teams\": [...]} (\(Self.describe(error)))")
        }
        guard !entries.isEmpty else {
            throw ConfigurationError("SIWA_TEAMS_FILE '\(path)' lists no team: add at least one entry, or unset SIWA_TEAMS_FILE")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        var out: [AppleCredentials] = []
        var seen: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let at = "SIWA_TEAMS_FILE teams[\(index)]"
            guard !entry.client_ids.isEmpty else { throw ConfigurationError("\(at).client_ids is empty") }
            let keyPath = entry.key_file.hasPrefix("/") ? entry.key_file : base.appendingPathComponent(entry.key_file).path
            guard let pem = FileManager.default.contents(atPath: keyPath) else {
                throw ConfigurationError("\(at).key_file '\(keyPath)' cannot be read")
            }
            let key: P256PrivateKey
            do { key = try P256PrivateKey(pem: String(decoding: pem, as: UTF8.self)) } catch {
                throw ConfigurationError("\(at).key_file '\(keyPath)' is not a usable Sign in with Apple key: \(error)")
            }
            for client in entry.client_ids {
                if let first = seen["\(entry.team_id) \(client)"] {
                    throw ConfigurationError("\(at): team \(entry.team_id) with client '\(client)' is already listed in "
                        + "teams[\(first)]: list each team and client once")
                }
                seen["\(entry.team_id) \(client)"] = index
                do {
                    out.append(try AppleCredentials(teamID: entry.team_id, keyID: entry.key_id, clientID: client, privateKey: key))
                } catch {
                    throw ConfigurationError("\(at) (client '\(client)'): \(error)")
                }
            }
        }
        return out
    }

    private static func describe(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "not JSON" }
        switch decoding {
        case .keyNotFound(let key, _): return "missing field '\(key.stringValue)'"
        case .typeMismatch(_, let ctx), .valueNotFound(_, let ctx):
            return "wrong type at '\(ctx.codingPath.map(\.stringValue).joined(separator: "."))'"
        case .dataCorrupted: return "not valid JSON"
        @unknown default: return "not valid"
        }
    }
}

/// One team's entry in `SIWA_TEAMS_FILE`.
struct TeamEntry: Decodable {
    var team_id: String
    var key_id: String
    var key_file: String
    var client_ids: [String]

    struct Wrapped: Decodable { var teams: [TeamEntry] }
}
