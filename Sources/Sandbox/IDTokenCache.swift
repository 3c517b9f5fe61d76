import Synchronization

/// The signed id_tokens of refresh-token validation answers, kept per user for a short time so a
/// user validated again soon gets the same token instead of a new RSA signature.
///
/// An RS256 signature is the sandbox's most expensive step (about 0.37 ms of CPU at 2048 bits).
/// A token is reused only while it is still honest for the answer: its `iat` is not after now
/// (a sandbox clock moved back never hands out a token "from the future"), it is younger than
/// `reuseSeconds` (at most half of the id_token lifetime, so a reused token still has at least
/// half its lifetime left; apple-api.md §7.3: clients must trust `exp`), and it is signed by the
/// current signing key (`kid`), so a key rotation takes effect at once. Entries are keyed by team,
/// client and `sub`: a user never gets another user's or another client's token (`aud`).
/// Thread-safe; signing happens outside the lock.
final class IDTokenCache: Sendable {
    struct Key: Hashable {
        var teamID: String
        var clientID: String
        var sub: String
    }

    struct Entry {
        var token: String
        var kid: String
        /// The token's `iat`, seconds since 1970.
        var iat: Int
    }

    /// Seconds a signed token is reused, 0 (never) ... `lifetime / 2`.
    let reuseSeconds: Int
    /// Most entries kept. When reached, tokens too old to reuse are dropped; if that frees less
    /// than a quarter, every entry is (each costs about 1 KB).
    let limit: Int
    private let entries = Mutex<[Key: Entry]>([:])

    /// - Parameters:
    ///   - reuseSeconds: wanted reuse window, seconds; clamped to `0...lifetime / 2`.
    ///   - lifetime: the id_tokens' `exp - iat`, seconds.
    ///   - limit: most entries kept (default 100,000).
    init(reuseSeconds: Int, lifetime: Int, limit: Int = 100_000) {
        self.reuseSeconds = max(0, min(reuseSeconds, lifetime / 2))
        self.limit = max(1, limit)
    }

    /// Entries kept now.
    var count: Int { entries.withLock { $0.count } }

    /// The user's token signed by key `kid` at most `reuseSeconds` ago and not after `now`
    /// (seconds since 1970); nil when there is none.
    func reusable(_ key: Key, kid: String, now: Int) -> String? {
        guard reuseSeconds > 0 else { return nil }
        return entries.withLock { map in
            guard let entry = map[key], entry.kid == kid, entry.iat <= now, now - entry.iat < reuseSeconds else { return nil }
            return entry.token
        }
    }

    /// Keeps `token` (signed by `kid`, `iat` seconds since 1970) for `key`, replacing an older one.
    func keep(_ token: String, kid: String, iat: Int, for key: Key) {
        guard reuseSeconds > 0 else { return }
        entries.withLock { map in
            if map[key] == nil, map.count >= limit {
                let before = map.count
                map = map.filter { iat - $0.value.iat < reuseSeconds && $0.value.iat <= iat }
                if map.count > before - before / 4 { map.removeAll(keepingCapacity: true) }
            }
            map[key] = Entry(token: token, kid: kid, iat: iat)
        }
    }
}
