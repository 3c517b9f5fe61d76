import Clocks
import Foundation
import SIWACrypto
import Synchronization

/// Thread-safe cache of the current client secret. Returns the cached secret while more than
/// `refreshMargin` remains before its `exp` on the injected clock; otherwise mints a new one
/// (under the lock, so concurrent callers mint once).
public final class ClientSecretProvider: Sendable {
    public let credentials: AppleCredentials
    /// Lifetime of each minted secret (60 s ... 15 777 000 s).
    public let lifetime: Duration
    /// Re-mint when less than this remains; at most half the lifetime.
    public let refreshMargin: Duration
    private let clock: any WallClock
    private let state = Mutex<State>(State())

    private struct State {
        var token: String?
        /// `client_id=…&client_secret=…` for `token`, form-encoded once per mint.
        var credentialFields: [UInt8] = []
        var expiresAt = Date.distantPast
        var mintCount = 0
    }

    /// - Parameters:
    ///   - lifetime: how long each secret is valid (default 1 hour); clamped to
    ///     `ClientSecret.minimumLifetime ... ClientSecret.maximumLifetime`.
    ///   - refreshMargin: how long before expiry to re-mint (default 5 minutes); clamped to
    ///     0 ... lifetime/2 so a secret is always reused for at least half its life.
    ///   - clock: the time `iat`/`exp` are minted from and expiry is judged by (default the
    ///     system clock).
    public init(
        credentials: AppleCredentials,
        lifetime: Duration = .seconds(3600),
        refreshMargin: Duration = .seconds(300),
        clock: any WallClock = SystemClock()
    ) {
        let effectiveLifetime = min(max(lifetime, ClientSecret.minimumLifetime), ClientSecret.maximumLifetime)
        self.credentials = credentials
        self.lifetime = effectiveLifetime
        self.refreshMargin = min(max(refreshMargin, .zero), effectiveLifetime / 2)
        self.clock = clock
    }

    /// The client ID the secrets are minted for (`sub`).
    public var clientID: String { credentials.clientID }

    /// The current secret, minting a new one if none is cached or it is near expiry.
    /// - Throws: `CryptoError` if signing fails.
    public func secret() throws(CryptoError) -> String {
        try current().token
    }

    /// The form fields `client_id=<id>&client_secret=<secret>` of the current secret
    /// (`client_secret_post`), encoded once per mint (`FormEncoding`) rather than per request:
    /// the secret is the longest part of every request body.
    /// - Throws: `CryptoError` if signing fails.
    func credentialFields() throws(CryptoError) -> [UInt8] {
        try current().fields
    }

    /// The cached secret and its encoded form fields, minted afresh when none is cached or it
    /// is near expiry.
    private func current() throws(CryptoError) -> (token: String, fields: [UInt8]) {
        try state.withLock { (state) throws(CryptoError) -> (token: String, fields: [UInt8]) in
            let now = clock.now
            if let token = state.token, state.expiresAt.timeIntervalSince(now) > refreshMargin.seconds {
                return (token, state.credentialFields)
            }
            let minted = try ClientSecret.mint(credentials: credentials, now: now, lifetime: lifetime)
            state.token = minted.token
            state.credentialFields = FormEncoding.encodedBytes([("client_id", credentials.clientID), ("client_secret", minted.token)])
            state.expiresAt = minted.expiresAt
            state.mintCount += 1
            return (minted.token, state.credentialFields)
        }
    }

    /// Drops the cached secret so the next call mints a fresh one (e.g. after `invalid_client`).
    public func invalidate() {
        state.withLock { $0.token = nil }
    }

    /// How many secrets this provider has minted.
    public var mintCount: Int { state.withLock { $0.mintCount } }
}
