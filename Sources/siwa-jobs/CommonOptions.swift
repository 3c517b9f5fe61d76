import Commands
import SIWACore

/// Options several commands share, declared once.
enum CommonOptions {
    /// A team ID or key ID given by flag is checked by the parser: a malformed one is a usage error
    /// naming the flag (exit 64). The same values from the environment are configuration (78).
    static let teamIDValue = ValueType<String>.appleTenCharacterID("Team ID", from: "copy it from the team's membership page")
    static let keyIDValue = ValueType<String>.appleTenCharacterID("key ID", from: "the <kid> of AuthKey_<kid>.p8")
    /// A sandbox's base URL (`--sandbox`): http(s) with a host and no user or password, and plain
    /// http only to a loopback address, the rule `SIWA_APPLE_BASE_URL` follows (a name such as
    /// localhost does not count).
    static let sandboxURL = ValueType<String>(summary: nil) { (text: String) throws(ValueError) -> String in
        let url = try ValueType<String>.httpURL(text)
        guard let (scheme, host) = Loopback.schemeAndHost(of: url), scheme == "https" || Loopback.isLoopback(host: host) else {
            throw ValueError(expected: "an https:// URL, or http:// to a loopback address (127.0.0.0/8 or [::1]; a name such as "
                             + "localhost does not count)")
        }
        return url
    }
    static let teamID = Declare.option("team-id", "T", teamIDValue, help: "the team ID", environment: ["SIWA_TEAM_ID"])
    static let clientID = Declare.option("client-id", "C", .appleClientID, help: "the client ID (App ID or Services ID)",
                                         environment: ["SIWA_CLIENT_ID"])
    static let keyID = Declare.option("key-id", "K", keyIDValue, help: "the key ID (kid) of the .p8 key",
                                     environment: ["SIWA_KEY_ID"])
    static let keyFile = Declare.option("key-file", "FILE", .string, help: "path of the team's .p8 key",
                                        environment: ["SIWA_KEY_FILE", "SIWA_PRIVATE_KEY"])
    static let createdBy = Declare.option("created-by", "NAME", .recordedName, help: "recorded as the job's creator",
                                          defaultText: "$USER, else cli")
    static let job = Declare.option("job", "N", .integer(in: 1...Int.max), help: "the job id")

    /// `--max-attempts N` with a kind's default.
    static func maxAttempts(default value: Int) -> Option<Int> {
        Declare.value("max-attempts", "N", .integer(in: 1...100), default: value,
                      help: "attempts per item before it is discarded")
    }
}
