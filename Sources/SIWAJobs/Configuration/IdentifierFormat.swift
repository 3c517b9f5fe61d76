import SIWACore

/// Shape checks for Apple identifiers given in settings and flags, with messages naming them.
public enum IdentifierFormat {
    /// Team IDs and key IDs are 10 characters of A-Z and 0-9.
    /// - Parameters:
    ///   - setting: how the message names it, e.g. `SIWA_TEAM_ID / --team-id`.
    ///   - what: `team ID` or `key ID`.
    /// - Throws: `ConfigurationError` `<setting> is not set` or `<setting> '<value>' is not a <what>: ...`.
    public static func tenCharacterID(_ value: String?, setting: String, what: String) throws(ConfigurationError) -> String {
        guard let value else { throw ConfigurationError("\(setting) is not set") }
        guard value.count == 10, value.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
            throw ConfigurationError("\(setting) '\(printable(value))' is not a \(what): expected 10 characters A-Z and 0-9")
        }
        return value
    }

    /// `value` for a message (`PrintableText`): control characters escaped, at most 60
    /// characters, longer ones marked with their length inside the quotes.
    public static func printable(_ value: String) -> String {
        PrintableText.escapedPrefix(value) + PrintableText.lengthNote(value)
    }
}

extension SIWAConfiguration {
    /// The team and client a job is planned for: the flags' values or `SIWA_TEAM_ID` and
    /// `SIWA_CLIENT_ID`, checked for shape (a 10-character team ID; a client ID of printable ASCII
    /// without spaces, at most 255 characters, that is not the team ID).
    /// - Throws: `ConfigurationError` naming the variable and flag.
    public func jobTarget(teamID: String?, clientID: String?) throws(ConfigurationError) -> (teamID: String, clientID: String) {
        let team = try IdentifierFormat.tenCharacterID(try require("SIWA_TEAM_ID", override: teamID, flag: "team-id"),
                                                       setting: "SIWA_TEAM_ID / --team-id", what: "team ID")
        let client = try require("SIWA_CLIENT_ID", override: clientID, flag: "client-id")
        guard AppleIdentifier.isClientID(client), client != team else {
            throw ConfigurationError("SIWA_CLIENT_ID / --client-id '\(IdentifierFormat.printable(client))' is not a client ID "
                + "(App ID or Services ID: printable ASCII without spaces, e.g. com.example.app)")
        }
        return (team, client)
    }
}
