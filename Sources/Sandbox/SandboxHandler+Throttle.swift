import Foundation
import MicroHTTP
import SIWACrypto

extension SandboxHandler {
    /// The paths a team's rate limit covers (and a worker's rate budget): `/auth/keys` is not one.
    static let budgetedPaths: Set<String> = ["/auth/token", "/auth/revoke", "/auth/usermigrationinfo"]

    /// The team a POST to a budgeted path counts against: the `iss` of its `client_secret`, from
    /// the model's cache of verified secrets, else read without verification (a throttle keys on
    /// what the caller claims, before any verification). Nil for other requests or no readable team.
    /// - Parameter form: the request's body as parsed once by `respond(to:)` (nil: none readable).
    func budgetedTeam(of req: HTTPServerRequest, form: FormBody?) -> String? {
        guard req.method == "POST", Self.budgetedPaths.contains(req.path), !req.bodyTooLarge,
              let form, let secret = form["client_secret"], !secret.isEmpty else { return nil }
        if let cached = model.verifiedSecret(secret)?.teamID { return cached }
        guard let jws = try? JWS.split(secret),
              let claims = (try? JSONSerialization.jsonObject(with: Data(jws.payload))) as? [String: Any],
              let team = claims["iss"] as? String, !team.isEmpty else { return nil }
        return team
    }
}
