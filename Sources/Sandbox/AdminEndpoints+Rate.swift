import Foundation
import MicroHTTP

extension AdminEndpoints {
    private struct RateLimitIn: Decodable {
        var team_id: String?
        var rps: Double
        var burst: Double?
        var retry_after: Int?
    }

    /// `POST /__sandbox/rate-limit`: `{"rps":250,"burst":25,"retry_after":1}` throttles every team
    /// without a limit of its own; with `"team_id":"T"` only that team. `burst` defaults to a
    /// tenth of `rps` (at least 1), `retry_after` to 1 s; `"rps":0` removes the limit.
    func rateLimit(_ body: [UInt8]) throws -> HTTPServerResponse {
        let r = try AdminJSON.decode(RateLimitIn.self, body)
        guard r.rps.isFinite, (0...1_000_000).contains(r.rps) else {
            throw SandboxAdminError(field: "rps", reason: "expected requests per second from 0 to 1000000")
        }
        if let burst = r.burst, !(burst.isFinite && burst >= 1 && burst <= 10_000_000) {
            throw SandboxAdminError(field: "burst", reason: "expected requests from 1 to 10000000")
        }
        if let s = r.retry_after, !(0...86_400).contains(s) {
            throw SandboxAdminError(field: "retry_after", reason: "expected seconds in 0...86400")
        }
        if let team = r.team_id, team.isEmpty { throw SandboxAdminError(field: "team_id", reason: "must not be empty") }
        let settings = r.rps > 0 ? RateLimitSettings(rps: r.rps, burst: r.burst, retryAfterSeconds: r.retry_after ?? 1) : nil
        throttle.setLimit(settings, team: r.team_id)
        return .adminJSON("{\"ok\":true}")
    }

    /// `GET /__sandbox/rate`: per team, its limit, its answers per second, 429s and how the team
    /// honoured `Retry-After` (see `RateThrottle`).
    func rateReport() throws -> HTTPServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return .adminJSON(bytes: Array(try encoder.encode(RateReport(throttle.state.withLock { $0 }))))
    }
}

/// The body of `GET /__sandbox/rate`.
struct RateReport: Encodable {
    struct Limit: Encodable {
        var rps: Double
        var burst: Double
        var retryAfter: Int
        enum CodingKeys: String, CodingKey { case rps, burst, retryAfter = "retry_after" }
        init(_ s: RateLimitSettings) { rps = s.rps; burst = s.burst; retryAfter = s.retryAfterSeconds }
    }

    struct Team: Encodable {
        var limit: Limit?
        var accepted: Int
        var throttled: Int
        var earlyRequests: Int
        var seconds: [RateThrottle.Second]
        var recent429s: [RateThrottle.Throttled]
        enum CodingKeys: String, CodingKey {
            case limit, accepted, throttled, seconds
            case earlyRequests = "early_requests"
            case recent429s = "recent_429s"
        }
    }

    var defaultLimit: Limit?
    var teams: [String: Team]
    enum CodingKeys: String, CodingKey { case defaultLimit = "default_limit", teams }

    init(_ s: RateThrottle.State) {
        defaultLimit = s.defaultLimit.map(Limit.init)
        var teams: [String: Team] = [:]
        for (id, t) in s.teams {
            teams[id] = Team(limit: (s.limits[id] ?? s.defaultLimit).map(Limit.init), accepted: t.accepted, throttled: t.throttled,
                             earlyRequests: t.earlyRequests, seconds: t.seconds.values.sorted { $0.t < $1.t }, recent429s: t.recent)
        }
        self.teams = teams
    }
}
