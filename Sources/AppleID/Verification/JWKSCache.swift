import Clocks
import Foundation
import SIWACrypto

/// Result of `JWKSCache.lookup(kid:)`.
public enum JWKSLookup: Sendable {
    case found(RSAPublicKey)
    /// No key with that kid; `detail` says which kids are known and whether a refetch was made,
    /// skipped (rate limit) or failed. Safe to log.
    case missing(detail: String)
}

/// Caches Apple's JWKS by `kid` and refetches it when needed (apple-api.md §6: keys rotate;
/// pick by `kid`; refetch on an unknown `kid`, rate-limited; keep the last good set).
///
/// Fetch policy, on the injected clock:
/// - the first lookup loads the set;
/// - a lookup for an unknown `kid`, or one made when the set is older than `maximumAge`,
///   refetches, but at most one fetch starts per `minimumRefetchInterval` (default 60 s),
///   whatever the outcome of the previous one;
/// - concurrent lookups share one in-flight fetch;
/// - a successful fetch replaces the whole set (keys Apple removed are dropped); a failed fetch or
///   an unusable document keeps the last good set and is reported in `lastFetchError`.
public actor JWKSCache {
    public nonisolated let minimumRefetchInterval: Duration
    public nonisolated let maximumAge: Duration
    private let provider: any JWKSProvider
    private let clock: any WallClock
    private var current: JWKSet?
    private var loadedAt = Date.distantPast
    private var lastFetchStart: Date?
    private var inFlight: Task<Void, Never>?

    /// Fetches started so far (successful or not).
    public private(set) var fetchCount = 0
    /// Why the most recent fetch failed; nil after a successful one.
    public private(set) var lastFetchError: JWKSError?

    /// - Parameters:
    ///   - provider: where the JWKS document comes from.
    ///   - minimumRefetchInterval: least time between the starts of two fetches (default 60 s;
    ///     negative values mean 60 s).
    ///   - maximumAge: age after which a loaded set is refreshed on the next lookup, subject to
    ///     the same rate limit (default one day; zero or negative values mean one day).
    ///   - clock: judges the interval and the age (default the system clock).
    public init(
        provider: any JWKSProvider,
        minimumRefetchInterval: Duration = .seconds(60),
        maximumAge: Duration = .seconds(86_400),
        clock: any WallClock = SystemClock()
    ) {
        self.provider = provider
        self.minimumRefetchInterval = minimumRefetchInterval >= .zero ? minimumRefetchInterval : .seconds(60)
        self.maximumAge = maximumAge > .zero ? maximumAge : .seconds(86_400)
        self.clock = clock
    }

    /// When the current set was fetched (nil before the first good fetch), on the injected clock.
    public var lastLoadedAt: Date? { current == nil ? nil : loadedAt }

    /// Key ids of the current set, in document order (empty before the first good fetch).
    public var knownKIDs: [String] { current?.kids ?? [] }

    /// The key for `kid`, refetching first if the policy above allows and calls for it.
    public func lookup(kid: String) async -> JWKSLookup {
        let now = clock.now
        let stale = now.timeIntervalSince(loadedAt) > maximumAge.seconds
        if let key = current?.key(kid: kid), !stale { return .found(key) }
        var fetchNote = ""
        if let inFlight {
            await inFlight.value
        } else if let last = lastFetchStart, now.timeIntervalSince(last) < minimumRefetchInterval.seconds {
            let ago = Int(max(0, now.timeIntervalSince(last)))
            fetchNote = "refetch skipped: last fetch \(ago) s ago, minimum interval \(Int(minimumRefetchInterval.seconds)) s"
        } else {
            await fetch()
        }
        if let key = current?.key(kid: kid) { return .found(key) }
        if let lastFetchError, fetchNote.isEmpty { fetchNote = "fetch failed: \(lastFetchError)" }
        let known = current.map { "known kids: " + $0.kids.joined(separator: ", ") } ?? "no JWKS loaded"
        let parts = ["kid \(JWTVerificationError.quote(kid)) not in the JWKS", known, fetchNote].filter { !$0.isEmpty }
        return .missing(detail: parts.joined(separator: "; "))
    }

    /// Fetches now, ignoring the rate limit (priming at startup, the CLI). Joins a fetch already
    /// in flight instead of starting another.
    /// - Throws: `JWKSError` if that fetch failed; the last good set is kept.
    public func refresh() async throws(JWKSError) {
        if let inFlight {
            await inFlight.value
        } else {
            await fetch()
        }
        if let lastFetchError { throw lastFetchError }
    }

    private func fetch() async {
        fetchCount += 1
        lastFetchStart = clock.now
        let task = Task { await self.load() }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private func load() async {
        do throws(JWKSError) {
            let bytes = try await provider.fetch()
            current = try JWKSet.parse(bytes)
            loadedAt = clock.now
            lastFetchError = nil
        } catch {
            lastFetchError = error
        }
    }
}
