import Foundation
import MicroHTTP
import SIWACore

extension AdminEndpoints {
    /// `POST /__sandbox/authorize` plays the device's side of a sign-in (Content-Type
    /// `application/json`, else 415): body `{"team_id","client_id","sub"? (omit for a new user),
    /// "nonce"? (raw; the token carries its SHA-256 hex unless "nonce_hashed": false),
    /// "redirect_uri"?, "email"?, "private_email"? (default true), "real_user_status"? (0...2, or
    /// null to omit; default 2), "transfer_sub"?, "aud"?, "iat"?, "lifetime_seconds"? (default 600)}`
    /// → `{"identity_token","code","sub","email","kid"}`. The code is single-use and lives 5 minutes
    /// on the sandbox clock (`POST /__sandbox/clock` moves it).
    func authorize(_ req: HTTPServerRequest) throws -> HTTPServerResponse {
        guard req.mediaType == "application/json" else {
            return .adminError("content type: expected application/json", status: 415)
        }
        let input = try AdminJSON.decode(AuthorizeIn.self, req.body)
        var request = SandboxAuthorizationRequest(teamID: input.team_id, clientID: input.client_id, sub: input.sub,
                                                  nonce: input.nonce, redirectURI: input.redirect_uri)
        request.nonceHashed = input.nonce_hashed ?? true
        request.email = input.email
        request.privateEmail = input.private_email ?? true
        switch input.real_user_status {
        case nil: break
        case .some(.none): request.realUserStatus = nil
        case .some(.some(let value)):
            guard (0...2).contains(value) else { throw SandboxAdminError(field: "real_user_status", reason: "expected 0, 1, 2 or null") }
            request.realUserStatus = value
        }
        request.transferSub = input.transfer_sub
        request.audience = input.aud
        request.issuedAt = input.iat
        request.lifetimeSeconds = input.lifetime_seconds ?? 600
        let issued = try model.authorize(request, keys: keys)
        return .adminJSON("{\"identity_token\":\(JSONText.quote(issued.identityToken)),\"code\":\(JSONText.quote(issued.code)),"
            + "\"sub\":\(JSONText.quote(issued.sub)),\"email\":\(JSONText.quote(issued.email)),"
            + "\"kid\":\(JSONText.quote(keys.currentKID))}")
    }

    private struct AuthorizeIn: Decodable {
        var team_id: String
        var client_id: String
        var sub: String?
        var nonce: String?
        var nonce_hashed: Bool?
        var redirect_uri: String?
        var email: String?
        var private_email: Bool?
        var real_user_status: Int??
        var transfer_sub: String?
        var aud: String?
        var iat: Int?
        var lifetime_seconds: Int?

        enum CodingKeys: String, CodingKey {
            case team_id, client_id, sub, nonce, nonce_hashed, redirect_uri, email, private_email, real_user_status
            case transfer_sub, aud, iat, lifetime_seconds
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            team_id = try c.decode(String.self, forKey: .team_id)
            client_id = try c.decode(String.self, forKey: .client_id)
            sub = try c.decodeIfPresent(String.self, forKey: .sub)
            nonce = try c.decodeIfPresent(String.self, forKey: .nonce)
            nonce_hashed = try c.decodeIfPresent(Bool.self, forKey: .nonce_hashed)
            redirect_uri = try c.decodeIfPresent(String.self, forKey: .redirect_uri)
            email = try c.decodeIfPresent(String.self, forKey: .email)
            private_email = try c.decodeIfPresent(Bool.self, forKey: .private_email)
            // Absent: the default; null: leave the claim out.
            real_user_status = c.contains(.real_user_status) ? .some(try c.decodeIfPresent(Int.self, forKey: .real_user_status)) : nil
            transfer_sub = try c.decodeIfPresent(String.self, forKey: .transfer_sub)
            aud = try c.decodeIfPresent(String.self, forKey: .aud)
            iat = try c.decodeIfPresent(Int.self, forKey: .iat)
            lifetime_seconds = try c.decodeIfPresent(Int.self, forKey: .lifetime_seconds)
        }
    }
}

extension SandboxServer {
    /// Issues an identity token and an authorization code, as `POST /__sandbox/authorize` does.
    /// - Throws: `SandboxStartError` when the server is not running; `SandboxAdminError`.
    public func authorize(_ request: SandboxAuthorizationRequest) throws -> SandboxAuthorization {
        guard let keys = signingKeys else { throw SandboxStartError(description: "sandbox is not running") }
        return try model.authorize(request, keys: keys)
    }
}
