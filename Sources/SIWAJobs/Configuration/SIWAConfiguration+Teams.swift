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
    ///   already lists that team and client with the same key (then it is listed once).
    ///
    /// - Throws: `ConfigurationError`: the teams file's (checked first), then the single team's,
    ///   then a conflict between them (`checkAgreement`): two keys for one team and client, or
    ///   one key id with two keys.
    public func allCredentials() throws(ConfigurationError) -> [AppleCredentials] {
        var all: [AppleCredentials] = []
        var file: [(index: Int, credentials: AppleCredentials)] = []
        if let path = teamsFilePath {
            file = try teamsFileEntries(path)
            all = file.map(\.credentials)
        }
        if hasSingleTeamCredentials {
            let single = try credentials()
            try Self.checkAgreement(single, with: file.filter { $0.credentials.teamID == single.teamID })
            if !all.contains(where: { $0.teamID == single.teamID && $0.clientID == single.clientID }) { all.append(single) }
        }
        return all
    }

    /// The single team's credentials (`SIWA_TEAM_ID`, `SIWA_KEY_ID`, `SIWA_CLIENT_ID`, the key)
    /// must agree with the teams file's entries for the same team: for the same client the same
    /// key id and key; a key id the file lists with the same key; and, when the file lists the
    /// team, a key id it lists. Otherwise which key signs is ambiguous.
    /// - Throws: `ConfigurationError` naming the variable and the teams-file entry.
    static func checkAgreement(_ single: AppleCredentials,
                               with entries: [(index: Int, credentials: AppleCredentials)]) throws(ConfigurationError) {
        guard !entries.isEmpty else { return }
        let fix = "list each of the team's keys in SIWA_TEAMS_FILE and unset SIWA_KEY_ID and SIWA_KEY_FILE / SIWA_PRIVATE_KEY, "
            + "or make them match"
        let pem = single.privateKey.publicKey.spkiPEM
        for (index, entry) in entries {
            let at = "SIWA_TEAMS_FILE teams[\(index)]"
            if entry.keyID == single.keyID && entry.privateKey.publicKey.spkiPEM != pem {
                throw ConfigurationError("the key of SIWA_KEY_FILE / SIWA_PRIVATE_KEY is not the key_file of \(at), though both are "
                    + "key \(single.keyID) of team \(single.teamID): \(fix)", setting: "SIWA_KEY_FILE")
            }
            if entry.clientID == single.clientID && entry.keyID != single.keyID {
                throw ConfigurationError("\(single.keyID) conflicts with \(at), which uses key \(entry.keyID) for team "
                    + "\(single.teamID) and client '\(single.clientID)': \(fix)", setting: "SIWA_KEY_ID")
            }
        }
        if !entries.contains(where: { $0.credentials.keyID == single.keyID }) {
            let listed = Set(entries.map(\.credentials.keyID)).sorted().joined(separator: ", ")
            throw ConfigurationError("\(single.keyID) is not a key SIWA_TEAMS_FILE lists for team \(single.teamID) "
                + "(it lists \(listed)): \(fix)", setting: "SIWA_KEY_ID")
        }
    }

    /// The credentials of the teams file at `path`, one per team and client. The file is a JSON
    /// array, or `{"teams": [...]}`, of `{"team_id": "ABCDE12345", "key_id": "KEY1234567",
    /// "key_file": "/path/AuthKey_KEY1234567.p8", "client_ids": ["com.example.app"]}`; a relative
    /// `key_file` is resolved against the file's directory.
    /// - Throws: `ConfigurationError` naming the file, the entry index and the field: an
    ///   unreadable or malformed file, an empty list, a key file that cannot be read or is not a
    ///   P-256 key, a malformed ID, a team and client listed twice.
    public func teamsFile(_ path: String) throws(ConfigurationError) -> [AppleCredentials] {
        try teamsFileEntries(path).map(\.credentials)
    }

    /// `teamsFile(_:)` with each credential's entry index.
    func teamsFileEntries(_ path: String) throws(ConfigurationError) -> [(index: Int, credentials: AppleCredentials)] {
        let entries = try Self.decodeTeamsFile(path)
        guard !entries.isEmpty else {
            throw ConfigurationError("SIWA_TEAMS_FILE \(PrintableText.quotedPath(path)) lists no team: add at least one entry, or unset SIWA_TEAMS_FILE")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        var out: [(index: Int, credentials: AppleCredentials)] = []
        var seen: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let at = "SIWA_TEAMS_FILE teams[\(index)]"
            guard !entry.client_ids.isEmpty else { throw ConfigurationError("\(at).client_ids is empty") }
            let keyPath = entry.key_file.hasPrefix("/") ? entry.key_file : base.appendingPathComponent(entry.key_file).path
            try checkKeyFilePermissions(keyPath, what: "\(at).key_file", setting: "SIWA_TEAMS_FILE")
            let pem = try Self.readText(keyPath, what: "\(at).key_file", setting: nil)
            let key: P256PrivateKey
            do { key = try P256PrivateKey(pem: pem) } catch {
                throw ConfigurationError("\(at).key_file \(PrintableText.quotedPath(keyPath)) is not a usable Sign in with Apple key: \(error)")
            }
            for client in entry.client_ids {
                if let first = seen["\(entry.team_id) \(client)"] {
                    throw ConfigurationError("\(at): team \(entry.team_id) with client '\(client)' is already listed in "
                        + "teams[\(first)]: list each team and client once")
                }
                seen["\(entry.team_id) \(client)"] = index
                do {
                    out.append((index, try AppleCredentials(teamID: entry.team_id, keyID: entry.key_id, clientID: client,
                                                            privateKey: key)))
                } catch {
                    throw ConfigurationError("\(at) (client '\(client)'): \(error)")
                }
            }
        }
        return out
    }

    /// The teams file's entries as written, unchecked beyond their JSON shape.
    /// - Throws: `ConfigurationError` naming the file, the entry and the field.
    static func decodeTeamsFile(_ path: String) throws(ConfigurationError) -> [TeamEntry] {
        let data = Data(try readBytes(path, what: "SIWA_TEAMS_FILE", setting: nil))
        do {
            if data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "[") {
                return try JSONDecoder().decode([TeamEntry].self, from: data)
            }
            return try JSONDecoder().decode(TeamEntry.Wrapped.self, from: data).teams
        } catch {
            throw ConfigurationError("SIWA_TEAMS_FILE \(PrintableText.quotedPath(path)): expected [{\"team_id\", \"key_id\", \"key_file\", "
                + "\"client_ids\": [...]}] or {\"teams\": [...]} (\(describe(error)))")
        }
    }

    /// What is wrong with the file's JSON, naming the entry and field as the README writes them
    /// (`teams[1].client_ids[0]`), never Swift's `Index 1`.
    static func describe(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "not JSON" }
        switch decoding {
        case .keyNotFound(let key, let ctx):
            return "\(path(ctx.codingPath)): missing field '\(key.stringValue)'"
        case .typeMismatch(let type, let ctx), .valueNotFound(let type, let ctx):
            return "\(path(ctx.codingPath)): expected \(expected(type, at: ctx.codingPath.last))"
        case .dataCorrupted: return "not valid JSON"
        @unknown default: return "not valid"
        }
    }

    /// `teams[0].key_file` for a coding path (`teams` also for the bare-array form).
    static func path(_ keys: [any CodingKey]) -> String {
        var text = keys.first?.intValue == nil ? "" : "teams"
        for key in keys {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text.isEmpty ? "the top level" : text
    }

    /// What the field at `key` holds, in words (the decoder reports any list as `[Any]`).
    private static func expected(_ type: Any.Type, at key: (any CodingKey)?) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Double.Type: return "a number"
        case is [Any].Type: return key?.stringValue == "client_ids" ? "a list of strings" : "a list of team entries"
        default: return "an object"
        }
    }
}

/// One team's entry in `SIWA_TEAMS_FILE`.
struct TeamEntry: Decodable {
    var team_id: String
    var key_id: String
    var key_file: String
    var client_ids: [String]
    /// The team's Apple rate ceiling, requests/s (see `SIWAConfiguration.appleRateCeilings()`).
    var rate_limit_rps: Double?

    struct Wrapped: Decodable { var teams: [TeamEntry] }
}
