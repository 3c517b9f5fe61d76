import Foundation
import MicroHTTP
import SIWACore

/// The sandbox's own control API under `/__sandbox/` (JSON in and out; not part of Apple's surface).
///
/// It is unauthenticated (it signs notifications and plays users), so it only answers what a
/// local program sends on purpose: the `Host` header must name a loopback address (127.0.0.0/8,
/// `[::1]`) or `localhost`, which a DNS-rebinding page cannot make a browser send, and a `POST`
/// must say `Content-Type: application/json`, which a cross-site form cannot (`text/plain` is
/// refused with 415). Both are checked before anything else (`refusal(_:)`).
final class AdminEndpoints: Sendable {
    let model: SandboxModel
    let plan: FaultPlan
    let keys: SigningKeySet
    let throttle: RateThrottle
    /// Signs the id_tokens of users registered as signed in (`sign_in`).
    let apple: AppleEndpoints

    init(model: SandboxModel, plan: FaultPlan, apple: AppleEndpoints, throttle: RateThrottle = RateThrottle(defaultLimit: nil)) {
        self.model = model
        self.plan = plan
        self.keys = apple.keySet
        self.apple = apple
        self.throttle = throttle
    }

    func handle(_ req: HTTPServerRequest) -> HTTPServerResponse {
        if let refused = Self.refusal(req) { return refused }
        do {
            if let migration = try handleMigration(req) { return migration }
            switch (req.method, req.path) {
            case ("POST", "/__sandbox/teams"): return try registerTeam(req.body)
            case ("POST", "/__sandbox/refresh-tokens"): return try registerTokens(req.body)
            case ("GET", "/__sandbox/truth"): return try truth(req)
            case ("GET", "/__sandbox/stats"): return try stats()
            case ("POST", "/__sandbox/reset-stats"):
                model.resetStats()
                throttle.resetCounters()
                return .adminJSON("{\"ok\":true}")
            case ("POST", "/__sandbox/authorize"): return try authorize(req)
            case (_, "/__sandbox/authorize"): return .methodNotAllowed("POST")
            case ("POST", "/__sandbox/rate-limit"): return try rateLimit(req.body)
            case ("GET", "/__sandbox/rate"): return try rateReport()
            case (_, "/__sandbox/rate-limit"): return .methodNotAllowed("POST")
            case (_, "/__sandbox/rate"): return .methodNotAllowed("GET")
            case ("POST", "/__sandbox/faults"): return try faults(req.body)
            case ("POST", "/__sandbox/latency"): return try latency(req.body)
            case (_, "/__sandbox/teams"), (_, "/__sandbox/refresh-tokens"), (_, "/__sandbox/reset-stats"),
                 (_, "/__sandbox/faults"), (_, "/__sandbox/latency"):
                return .methodNotAllowed("POST")
            case (_, "/__sandbox/truth"), (_, "/__sandbox/stats"):
                return .methodNotAllowed("GET")
            default:
                return try handleKeysAndNotifications(req) ?? .notFound()
            }
        } catch let e as SandboxAdminError {
            return .adminError(e.description)
        } catch let e as DecodingError {
            return .adminError(AdminJSON.describe(e))
        } catch {
            return .adminError("body: \(error)")
        }
    }

    /// 421 when `Host` is not loopback (RFC 9110 §15.5.20: not this server's name), 415 for a
    /// `POST` that is not JSON; nil when the request may go on.
    static func refusal(_ req: HTTPServerRequest) -> HTTPServerResponse? {
        let host = req.header("host").flatMap { Loopback.schemeAndHost(of: "http://" + $0)?.host } ?? ""
        guard host == "localhost" || Loopback.isLoopback(host: host) else {
            return .adminError("Host '\(String((req.header("host") ?? "").prefix(80)))' is not a loopback address: "
                + "the sandbox's admin API answers only local programs", status: 421)
        }
        guard req.method != "POST" || req.mediaType == "application/json" else {
            return .adminError("Content-Type must be application/json", status: 415)
        }
        return nil
    }

    private struct TeamIn: Decodable {
        var team_id: String
        var key_id: String
        var public_key_pem: String
        var client_ids: [String]
    }

    private func registerTeam(_ body: [UInt8]) throws -> HTTPServerResponse {
        let t = try AdminJSON.decode(TeamIn.self, body)
        try model.registerTeam(teamID: t.team_id, keyID: t.key_id, publicKeyPEM: t.public_key_pem, clientIDs: t.client_ids)
        return .adminJSON("{\"ok\":true}")
    }

    private struct TokensIn: Decodable {
        struct Token: Decodable {
            var token: String
            var team_id: String
            var client_id: String
            var sub: String
            var state: String?
        }
        var tokens: [Token]
        /// The users signed in now: their id_tokens are signed at once and refresh answers within
        /// the reuse window hand them out (`AppleEndpoints.signInAhead`). Absent: false.
        var sign_in: Bool?
    }

    private func registerTokens(_ body: [UInt8]) throws -> HTTPServerResponse {
        let input = try AdminJSON.decode(TokensIn.self, body)
        var out: [SandboxRefreshToken] = []
        out.reserveCapacity(input.tokens.count)
        for (i, t) in input.tokens.enumerated() {
            let revoked: Bool
            switch t.state ?? "valid" {
            case "valid": revoked = false
            case "revoked": revoked = true
            default: throw SandboxAdminError(field: "tokens[\(i)].state", reason: "expected \"valid\" or \"revoked\"")
            }
            if t.token.isEmpty { throw SandboxAdminError(field: "tokens[\(i)].token", reason: "must not be empty") }
            out.append(SandboxRefreshToken(token: t.token, teamID: t.team_id, clientID: t.client_id, sub: t.sub, revoked: revoked))
        }
        model.registerRefreshTokens(out)
        var signed = 0
        if input.sign_in == true {
            let users = out.filter { !$0.revoked }.map { IDTokenCache.Key(teamID: $0.teamID, clientID: $0.clientID, sub: $0.sub) }
            signed = apple.signInAhead(users, now: Int(model.now))
            model.counters.withLock { $0.idTokensSigned += signed }
        }
        return .adminJSON("{\"registered\":\(out.count),\"id_tokens_signed\":\(signed)}")
    }

    private func truth(_ req: HTTPServerRequest) throws -> HTTPServerResponse {
        guard let team = req.query["team_id"], !team.isEmpty else {
            throw SandboxAdminError(field: "team_id", reason: "query parameter required")
        }
        guard let client = req.query["client_id"], !client.isEmpty else {
            throw SandboxAdminError(field: "client_id", reason: "query parameter required")
        }
        let t = model.truth(teamID: team, clientID: client)
        return .adminJSON("{\"valid\":\(t.valid),\"revoked\":\(t.revoked),\"revoke_requests\":\(t.revokeRequests),"
            + "\"tokens_revoked_more_than_once\":\(t.tokensRevokedMoreThanOnce)}")
    }

    private func stats() throws -> HTTPServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(model.stats())
        return .adminJSON(bytes: Array(data))
    }
}
