import Queue

extension RefreshValidationHandler {
    /// The validation's safety stop (`SafetyStopRule`, `SafetyStopSQL`): its `invalid_grant`
    /// results are outcome `invalid`, and their verdicts are held back until the first results
    /// pass the rule, so a validation pointed at the wrong target marks no real token invalid.
    static let safetyStop = SafetyStopSignal(invalidItem: "d.outcome = 'invalid'", invalidResult: "r.outcome = 'invalid'",
                                             holdsBack: true)
}
