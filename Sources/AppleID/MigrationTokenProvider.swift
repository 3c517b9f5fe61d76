import Foundation

/// A `client_credentials` access token for scope `user.migration` (apple-api.md §2.4), as handed
/// to callers. `description` never shows the token.
public struct MigrationToken: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The bearer token; send only in `Authorization: Bearer`.
    public let value: String
    /// Which mint produced it (1-based); `invalidate(_:)` compares it, so a burst of failures on
    /// one token causes one re-mint.
    public let generation: Int
    /// When the provider stops handing it out (mint time + `expires_in` - margin).
    public let refreshAfter: Date

    public var description: String { "MigrationToken(generation: \(generation))" }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// One migration access token per team and client, shared by every in-flight item.
///
/// - The token is minted on first use (`POST /auth/token`, `grant_type=client_credentials`,
///   `scope=user.migration`) and reused until `refreshMarginSeconds` before its `expires_in`
///   (Apple: one hour, usable many times; forum thread 761277).
/// - Minting is single-flight: callers arriving while a mint is in flight wait for that mint.
/// - `invalidate(_:)` drops the current token when Apple answered `invalid_grant` for it; the
///   next `token()` mints once for everyone. A stale invalidation (older generation) is ignored.
/// - A failed mint is not cached: the next caller tries again (the job policy decides whether
///   to pause or retry).
public actor MigrationTokenProvider {
    public let client: AppleIDClient
    /// Seconds before expiry at which the token is no longer handed out (at most half its life).
    public let refreshMarginSeconds: Double
    private let clock: @Sendable () -> Date
    private var current: MigrationToken?
    private var inflight: (id: Int, task: Task<Result<TokenResponse, AppleIDError>, Never>)?
    private var nextMintID = 0
    /// Successful mints so far.
    public private(set) var mints = 0

    /// - Parameters:
    ///   - refreshMarginSeconds: default 300 s.
    ///   - clock: injectable for tests.
    public init(client: AppleIDClient, refreshMarginSeconds: Double = 300, clock: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.refreshMarginSeconds = max(0, refreshMarginSeconds)
        self.clock = clock
    }

    /// The current token, minting one if there is none or it is about to expire.
    /// - Returns: the token, or the mint's classified error (`invalid_client`/`invalid_scope` are
    ///   configuration errors; 429/5xx/timeouts transient).
    public func token() async -> Result<MigrationToken, AppleIDError> {
        if let current, clock() < current.refreshAfter { return .success(current) }
        current = nil
        let mint: (id: Int, task: Task<Result<TokenResponse, AppleIDError>, Never>)
        if let inflight {
            mint = inflight
        } else {
            nextMintID += 1
            let client = self.client
            mint = (nextMintID, Task { await client.clientCredentialsToken(scope: "user.migration") })
            inflight = mint
        }
        let result = await mint.task.value
        if inflight?.id == mint.id {   // the first waiter to resume installs the result
            inflight = nil
            if case .success(let response) = result {
                mints += 1
                // A missing or tiny expires_in would mean one mint per item: trust at least 60 s
                // (an expired token answers invalid_grant, which re-mints once anyway).
                let life = max(Double(response.expiresIn), 60)
                let margin = min(refreshMarginSeconds, life / 2)
                current = MigrationToken(value: response.accessToken, generation: mints,
                                         refreshAfter: clock().addingTimeInterval(life - margin))
            }
        }
        switch result {
        case .success:
            if let current { return .success(current) }
            // Installed by another waiter and already invalidated meanwhile: mint again.
            return await token()
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Drops `token` if it is still the current one (Apple answered `invalid_grant` for it).
    public func invalidate(_ token: MigrationToken) {
        if current?.generation == token.generation { current = nil }
    }
}
