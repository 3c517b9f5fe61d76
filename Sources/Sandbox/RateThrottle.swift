import Foundation
import Synchronization

/// A per-team server-side limit as a real API keeps one: a token bucket of `rps` requests/s
/// holding at most `burst`, and the `Retry-After` (seconds) of the 429 a request gets when the
/// bucket is empty.
public struct RateLimitSettings: Sendable, Equatable {
    /// Requests per second, > 0.
    public var rps: Double
    /// The bucket's capacity, requests (at least 1). Default: a tenth of a second's worth.
    public var burst: Double
    /// Seconds sent in `Retry-After` on a throttled answer. Default 1.
    public var retryAfterSeconds: Int

    public init(rps: Double, burst: Double? = nil, retryAfterSeconds: Int = 1) {
        self.rps = rps
        self.burst = max(1, burst ?? (rps / 10).rounded())
        self.retryAfterSeconds = max(0, retryAfterSeconds)
    }
}

/// The sandbox's per-team throttle and its per-team counters, for `/auth/token`, `/auth/revoke`
/// and `/auth/usermigrationinfo` (the endpoints a team's rate budget covers). Thread-safe.
///
/// The counters say how clients behave under throttling: requests answered per second (accepted)
/// and 429s per second (any 429: throttled here or an injected fault), and whether clients
/// honour `Retry-After`: `earlyRequests` arrived while a 429's `Retry-After` was running, and
/// each recent 429 records when the team's next request arrived. Instants are seconds since 1970
/// on the sandbox's clock, when the request arrived.
final class RateThrottle: Sendable {
    struct Bucket {
        var tokens: Double
        var at: Double
    }

    /// One second's answers of one team.
    struct Second: Encodable, Equatable {
        var t: Int
        var accepted = 0
        var throttled = 0
    }

    /// A 429 a team got, and when its next request arrived (nil: none yet).
    struct Throttled: Encodable, Equatable {
        var at: Double
        var retryAfter: Int
        var nextRequestAt: Double?
        enum CodingKeys: String, CodingKey {
            case at
            case retryAfter = "retry_after"
            case nextRequestAt = "next_request_at"
        }
    }

    struct Team {
        var bucket: Bucket?
        var accepted = 0
        var throttled = 0
        var earlyRequests = 0
        /// The end of the latest `Retry-After` sent to the team.
        var retryAfterUntil = 0.0
        var seconds: [Int: Second] = [:]
        var recent: [Throttled] = []
    }

    struct State {
        var defaultLimit: RateLimitSettings?
        var limits: [String: RateLimitSettings] = [:]
        var teams: [String: Team] = [:]
    }

    /// Seconds of per-second counts kept per team, and recent 429s kept per team.
    static let secondsKept = 3600
    static let recentKept = 100

    let state: Mutex<State>

    init(defaultLimit: RateLimitSettings?) {
        state = Mutex(State(defaultLimit: defaultLimit))
    }

    /// Sets the limit of `team`, or the default of every team without its own (`team` nil);
    /// `nil` settings remove it. A new limit starts with a full bucket.
    func setLimit(_ settings: RateLimitSettings?, team: String?) {
        state.withLock { s in
            if let team { s.limits[team] = settings } else { s.defaultLimit = settings }
            for key in s.teams.keys where team == nil || key == team { s.teams[key]?.bucket = nil }
        }
    }

    /// The `Retry-After` seconds to answer `team`'s request arriving at `now` with, when its
    /// bucket is empty; nil when the request may pass (one token is taken).
    func refusal(team: String, now: Double) -> Int? {
        state.withLock { s in
            guard let limit = s.limits[team] ?? s.defaultLimit else { return nil }
            var entry = s.teams[team] ?? Team()
            var bucket = entry.bucket ?? Bucket(tokens: limit.burst, at: now)
            bucket.tokens = min(limit.burst, bucket.tokens + limit.rps * max(0, now - bucket.at))
            bucket.at = now
            let refused = bucket.tokens < 1
            if !refused { bucket.tokens -= 1 }
            entry.bucket = bucket
            s.teams[team] = entry
            return refused ? limit.retryAfterSeconds : nil
        }
    }

    /// Counts `team`'s request that arrived at `now` and got `status` (with `retryAfter`
    /// seconds when it is a 429).
    func record(team: String, status: Int, retryAfter: Int?, now: Double) {
        state.withLock { s in
            // Taken out, not copied: `entry` owns its per-second map uniquely, so adding this
            // second does not copy the whole map (up to an hour of seconds) on every request.
            var entry = s.teams.removeValue(forKey: team) ?? Team()
            if now < entry.retryAfterUntil { entry.earlyRequests += 1 }
            for i in entry.recent.indices.reversed() {
                guard entry.recent[i].nextRequestAt == nil else { break }
                if entry.recent[i].at < now { entry.recent[i].nextRequestAt = now }
            }
            let t = Int(now.rounded(.down))
            var second = entry.seconds[t] ?? Second(t: t)
            if status == 429 {
                second.throttled += 1
                entry.throttled += 1
                let seconds = retryAfter ?? 0
                entry.retryAfterUntil = max(entry.retryAfterUntil, now + Double(seconds))
                entry.recent.append(Throttled(at: now, retryAfter: seconds, nextRequestAt: nil))
                if entry.recent.count > Self.recentKept { entry.recent.removeFirst(entry.recent.count - Self.recentKept) }
            } else {
                second.accepted += 1
                entry.accepted += 1
            }
            entry.seconds[t] = second
            if entry.seconds.count > Self.secondsKept + 60 {
                entry.seconds = entry.seconds.filter { $0.key > t - Self.secondsKept }
            }
            s.teams[team] = entry
        }
    }

    /// Drops every team's counters (the limits are kept).
    func resetCounters() {
        state.withLock { s in
            for key in s.teams.keys {
                let bucket = s.teams[key]?.bucket
                s.teams[key] = Team(bucket: bucket)
            }
        }
    }
}
