import Foundation
import MicroHTTP
import SIWACore

/// `POST /auth/usermigrationinfo` (apple-api.md §4; TN3159, TN3107 "User Migration Info Response Errors").
///
/// Request checks, in order, and the error each failure gets:
/// 1. form-encoded body with only `client_id`, `client_secret`, `sub`, `target`, `transfer_sub` →
///    else `invalid_request`;
/// 2. `Authorization: Bearer <token>` present → else `invalid_request` (`missing_bearer`);
/// 3. client secret verifies → else `invalid_client`;
/// 4. the bearer token exists, has scope `user.migration` and has not expired (1 h after minting,
///    sandbox clock, i.e. wall clock + `SandboxModel.clockOffset`) → else `invalid_grant` (`bearer_invalid`; observed for consumed/expired tokens);
/// 5. the bearer was minted for this team **and** client → else `invalid_request`
///    (`bearer_client_mismatch`; TN3107: "mismatched access token, client_id, and client_secret sub");
/// 6. exactly one of `sub` (with `target`) or `transfer_sub` → else `invalid_request`;
/// 7. the exchange itself (`SandboxModel.exportTransferSub` / `importTransferSub`): per-user
///    failures are `invalid_request`, the closed 60-day window is `invalid_grant`.
extension AppleEndpoints {
    static let migrationParameters: Set<String> = ["client_id", "client_secret", "sub", "target", "transfer_sub"]

    func userMigrationInfo(_ req: HTTPServerRequest, now: Double, tally: inout RequestTally) -> HTTPServerResponse {
        answer { () throws(Rejection) in try userMigrationInfoChecked(req, now: now, tally: &tally) }
    }

    private func userMigrationInfoChecked(_ req: HTTPServerRequest, now: Double,
                                          tally: inout RequestTally) throws(Rejection) -> HTTPServerResponse {
        let form = try self.form(req, allowed: Self.migrationParameters)
        guard let header = req.authorization, header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            return .appleError("invalid_request", reason: "missing_bearer")
        }
        let bearerToken = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let client = try authenticate(form, now: now, tally: &tally)
        let shifted = now + model.clockOffset   // tests move bearer expiry and the window, not secrets
        guard let bearer = model.bearer(bearerToken, now: shifted), bearer.scope == "user.migration" else {
            return .appleError("invalid_grant", reason: "bearer_invalid")
        }
        guard bearer.teamID == client.teamID, bearer.clientID == client.clientID else {
            return .appleError("invalid_request", reason: "bearer_client_mismatch")
        }
        let sub = form["sub"].flatMap { $0.isEmpty ? nil : $0 }
        let transferSub = form["transfer_sub"].flatMap { $0.isEmpty ? nil : $0 }
        let exchange: MigrationExchange
        switch (sub, transferSub) {
        case let (sub?, nil):
            guard let target = form["target"], !target.isEmpty else { return .appleError("invalid_request", reason: "missing_target") }
            exchange = model.exportTransferSub(teamID: client.teamID, clientID: client.clientID, sub: sub, target: target, now: shifted)
        case let (nil, transferSub?):
            guard form["target"] == nil else { return .appleError("invalid_request", reason: "unsupported_parameter") }
            exchange = model.importTransferSub(teamID: client.teamID, clientID: client.clientID, transferSub: transferSub, now: shifted)
        default:
            return .appleError("invalid_request", reason: "sub_or_transfer_sub")
        }
        switch exchange {
        case .transferSub(let value):
            tally.transferSubIssued = true
            return .appleJSON("{\"transfer_sub\":\(JSONText.quote(value))}")
        case let .migrated(newSub, email, stringBoolean):
            tally.transferSubExchanged = true
            var body = "{\"sub\":\(JSONText.quote(newSub))"
            if let email { body += ",\"email\":\(JSONText.quote(email))" }
            let flag = email != nil ? "true" : "false"
            body += ",\"is_private_email\":" + (stringBoolean ? "\"\(flag)\"" : flag) + "}"
            return .appleJSON(body)
        case let .refused(code, reason):
            return .appleError(code, reason: reason)
        }
    }
}
