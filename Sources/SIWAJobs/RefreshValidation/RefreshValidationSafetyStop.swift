import Queue

/// The refresh validation's safety stop (`SafetyStopRule`, `SafetyStopSQL`): its `invalid_grant`
/// results are outcome `invalid`, and their verdicts are held back until the first results pass
/// the rule, so a validation pointed at the wrong target marks no real token invalid.
extension RefreshValidationHandler {
    /// A predicate on `done d`: the item's result is an `invalid_grant`.
    static let safetyInvalidItem = "d.outcome = 'invalid'"
    /// A predicate on `siwa.results r` (the client's last known rate).
    static let safetyInvalidResult = "r.outcome = 'invalid'"

    /// The effect's first step: count the batch and judge the window.
    static let safetyCounting = SafetyStopSQL.counting(invalid: safetyInvalidItem, holdsBack: true)
    /// The effect's last steps: apply held-back verdicts on a pass, pause on a trip, audit.
    static let safetyDeciding = SafetyStopSQL.deciding(holdsBack: true)

    /// How the enqueuer arms the stop with `rule`.
    static func safetyArming(_ rule: SafetyStopRule) -> SafetyStopArming {
        SafetyStopArming(rule: rule, resultIsInvalid: safetyInvalidResult)
    }
}
