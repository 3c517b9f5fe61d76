import Clocks
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
///   `scope=user.migration`) and reused until `refreshMargin` before its `expires_in` on the
///   injected clock (Apple: one hour, usable many times; forum thread 761277).
/// - Minting is single-flight: callers arriving while a mint is in flight wait for that mint.
/// - `invalidate(_:)` drops the current token when Apple answered `invalid_grant` for it; the
///   next `token()` mints once for everyone. A stale invalidation (older generation) is ignored.
/// - A failed mint is not cached: the next caller tries again (the job policy decides whether
///   to pause or retry).
public actor MigrationTokenProvider {
    public let client: AppleIDClient
    /// How long before expiry the token is no longer handed out (at most half its life).
    public let refreshMargin: Duration
    private let clock: any WallClock
    /// The mint in flight. Its task yields the outcome as a value (a `Task` can only throw
    /// `any Error`); `token()` rethrows it typed.
    private var inflight: (id: Int, task: Task<Result<TokenResponse, AppleIDError>, Never>)?
    private var current: MigrationToken?
    private var nextMintID = 0
    /// Successful mints so far.
    public private(set) var mints = 0

    /// - Parameters:
    ///   - refreshMargin: default 5 minutes; negative values mean zero.
    ///   - clock: judges expiry (default the system clock).
    public init(client: AppleIDClient, refreshMargin: Duration = .seconds(300), clock: any WallClock = SystemClock()) {
        self.client = client
        self.refreshMargin = max(.zero, refreshMargin)
        self.clock = clock
    }

    /// The current token, minting one if there is none or it is about to expire.
    /// - Throws: the mint's `AppleIDError` (`invalid_client`/`invalid_scope` are configuration
    ///   errors; 429/5xx/timeouts transient).
    public func token() async throws(AppleIDError) -> MigrationToken {
        if let current, clock.now < current.refreshAfter { return current }
        current = nil
        let mint: (id: Int, task: Task<Result<TokenResponse, AppleIDError>, Never>)
        if let inflight {
            mint = inflight
        } else {
            nextMintID += 1
            let client = self.client
            mint = (nextMintID, Task {
                do throws(AppleIDError) {
                    return .success(try await client.clientCredentialsToken(scope: "user.migration"))
                } catch {
                    return .failure(error)
                }
            })
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
                let margin = min(refreshMargin.seconds, life / 2)
                current = MigrationToken(value: response.accessToken, generation: mints,
                                         refreshAfter: clock.now.addingTimeInterval(life - margin))
            }
        }
        _ = try result.get()
        if let current { return current }
        // Installed by another waiter and already invalidated meanwhile: mint again.
        return try await token()
    }

    /// Drops `token` if it is still the current one (Apple answered `invalid_grant` for it).
    public func invalidate(_ token: MigrationToken) {
        if current?.generation == token.generation { current = nil }
    }
}
