import Foundation
import SIWACore

extension SafetyStopRule {
    /// The accepted spellings of a threshold (`--safety-stop`, `SIWA_SAFETY_STOP_PERCENT`): a
    /// whole percentage from 0 to 99 (an optional trailing `%`), or `off`; 0 and `off` disable
    /// the rule.
    /// - Returns: the rule with the default window; nil for any other text.
    public init?(parsing text: String) {
        var value = text.trimmingCharacters(in: .whitespaces).lowercased()
        if value == "off" { self = .off; return }
        if value.hasSuffix("%") { value.removeLast() }
        guard let percent = Int(value), (0...99).contains(percent) else { return nil }
        self.init(thresholdPercent: percent)
    }

    /// What `init(parsing:)` accepts, for messages and help.
    public static let accepted = "a percentage from 0 to 99, or off"
}

extension SIWAConfiguration {
    /// The safety stop for a validation or sweep being enqueued: `flag` (`--safety-stop`, already
    /// parsed), else `SIWA_SAFETY_STOP_PERCENT`, else the default (more than 50% `invalid_grant`
    /// in the first 200 results).
    /// - Throws: `ConfigurationError` naming `SIWA_SAFETY_STOP_PERCENT` when it is not
    ///   `SafetyStopRule.accepted`.
    public func safetyStopRule(flag: SafetyStopRule?) throws(ConfigurationError) -> SafetyStopRule {
        if let flag { return flag }
        guard let text = value("SIWA_SAFETY_STOP_PERCENT") else { return SafetyStopRule() }
        guard let rule = SafetyStopRule(parsing: text) else {
            throw ConfigurationError("expected \(SafetyStopRule.accepted), got '\(text)'", setting: "SIWA_SAFETY_STOP_PERCENT")
        }
        return rule
    }
}
