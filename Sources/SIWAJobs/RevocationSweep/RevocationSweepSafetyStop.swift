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

    static let safetyStop = SafetyStopSignal(invalidItem: "d.effect->>'apple_error' = 'invalid_grant'",
                                             invalidResult: "r.apple_error = 'invalid_grant'", holdsBack: false)
}
