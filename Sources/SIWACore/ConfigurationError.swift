/// The one configuration error of the code base: a setting (environment variable, flag, teams-file
/// entry or Apple answer about our credentials) that is missing, malformed or refused, so nothing
/// can run until an operator fixes it. The CLI maps it to exit 78 (`EX_CONFIG`).
///
/// `description` names the setting and says what to check; it never contains a secret (a key,
/// token or password), only names, shapes and fingerprints.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong, e.g. `SIWA_KEY_FILE`, `--team-id`, `teams[1].key_file`, `invalid_client`;
    /// `nil` when the message names it itself.
    public var setting: String?
    /// What is wrong and what to check, safe to log.
    public var message: String

    public init(_ message: String, setting: String? = nil) {
        self.setting = setting
        self.message = message
    }

    public var description: String {
        guard let setting else { return message }
        return "\(setting): \(message)"
    }
}
