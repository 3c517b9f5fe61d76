import AppleID
import Queue

/// The revocation sweep's safety stop (`SafetyStopRule`, `SafetyStopSQL`): Apple answers
/// `invalid_grant` to a revocation when the token was not issued to this client (apple-api.md
/// §3), so mostly `invalid_grant` means the wrong team, client or key. Such results change no
/// account (the token is wiped only on 200), so nothing is held back; the job pauses.
extension RevocationSweepHandler {
    /// The effect payload of a refused revocation: Apple's error code, which the stop counts.
    struct Refusal: Encodable, Sendable {
        let appleError: String
        enum CodingKeys: String, CodingKey { case appleError = "apple_error" }
    }

    /// The payload for a permanent error: `invalid_grant` is counted by the safety stop.
    static func refusalEffect(_ error: AppleIDError) -> EffectPayload? {
        guard let code = error.appleError, code == "invalid_grant" else { return nil }
        return EffectPayload(Refusal(appleError: code))
    }

    /// A predicate on `done d`: the item's result is an `invalid_grant`.
    static let safetyInvalidItem = "d.effect->>'apple_error' = 'invalid_grant'"
    /// A predicate on `siwa.results r` (the client's last known rate).
    static let safetyInvalidResult = "r.apple_error = 'invalid_grant'"

    /// The effect's first step: count the batch and judge the window.
    static let safetyCounting = SafetyStopSQL.counting(invalid: safetyInvalidItem, holdsBack: false)
    /// The effect's last steps: pause on a trip, audit.
    static let safetyDeciding = SafetyStopSQL.deciding(holdsBack: false)

    /// How the enqueuer arms the stop with `rule`.
    static func safetyArming(_ rule: SafetyStopRule) -> SafetyStopArming {
        SafetyStopArming(rule: rule, resultIsInvalid: safetyInvalidResult)
    }
}
