import Foundation
import Synchronization

/// Thread-safe cache of the current client secret. Returns the cached secret while more than
/// `refreshMargin` seconds remain before its `exp`; otherwise mints a new one (under the lock,
/// so concurrent callers mint once). The clock is injected for tests.
public final class ClientSecretProvider: Sendable {
    public let credentials: AppleCredentials
    /// Lifetime of each minted secret, seconds (clamped by `ClientSecret.mint` to 60...15 777 000).
    public let lifetime: TimeInterval
    /// Re-mint when fewer than this many seconds remain; at most half the lifetime.
    public let refreshMargin: TimeInterval
    private let clock: @Sendable () -> Date
    private let state = Mutex<State>(State())

    private struct State {
        var token: String?
        var expiresAt = Date.distantPast
        var mintCount = 0
    }

    /// - Parameters:
    ///   - lifetime: seconds each secret is valid (default 3600).
    ///   - refreshMargin: seconds before expiry at which to re-mint (default 300); clamped to
    ///     0...lifetime/2 so a secret is always reused for at least half its life.
    ///   - clock: current time source (default `Date.init`).
    public init(
        credentials: AppleCredentials,
        lifetime: TimeInterval = 3600,
        refreshMargin: TimeInterval = 300,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        let effectiveLifetime = lifetime.isFinite
            ? min(max(lifetime, ClientSecret.minimumLifetime), ClientSecret.maximumLifetime)
            : 3600
        self.credentials = credentials
        self.lifetime = effectiveLifetime
        self.refreshMargin = refreshMargin.isFinite ? min(max(refreshMargin, 0), effectiveLifetime / 2) : 300
        self.clock = clock
    }

    /// The client ID the secrets are minted for (`sub`).
    public var clientID: String { credentials.clientID }

    /// The current secret, minting a new one if none is cached or it is near expiry.
    /// - Throws: `CryptoError` if signing fails.
    public func secret() throws -> String {
        try state.withLock { state throws -> String in
            let now = clock()
            if let token = state.token, state.expiresAt.timeIntervalSince(now) > refreshMargin {
                return token
            }
            let minted = try ClientSecret.mint(credentials: credentials, now: now, lifetime: lifetime)
            state.token = minted.token
            state.expiresAt = minted.expiresAt
            state.mintCount += 1
            return minted.token
        }
    }

    /// Drops the cached secret so the next call mints a fresh one (e.g. after `invalid_client`).
    public func invalidate() {
        state.withLock { $0.token = nil }
    }

    /// How many secrets this provider has minted.
    public var mintCount: Int { state.withLock { $0.mintCount } }
}
