import AppleID
import Clocks
import Foundation
import Postgres
import Queue

/// The sign-in exchange (issue #10; README "Sign-in: accounts in through the exchange"). Items
/// carry `{"sign_in_id": N}`, a row of `siwa.sign_ins` submitted by `siwa.submit_sign_in`; they
/// belong to the standing `sign-in` job of their team and client, at priority 0, so a worker
/// claims them ahead of every bulk item.
///
/// Per sign-in, in order (each step's failure is the outcome, written back at once):
/// 1. credentials for the row's team and client (`configuration_error`);
/// 2. the identity token (`JWTVerifier`: RS256 only, key by `kid` from the shared `JWKSCache`
///    with one refetch, `iss`, `aud` = the row's client id, `exp`/`iat` with `leeway`), then the
///    nonce: the raw nonce's SHA-256 hex or the nonce itself, or the given SHA-256 hex
///    (`identity_token_rejected` with the check's reason). Nothing is sent to Apple before this
///    passes;
/// 3. the code, once (`AppleIDClient.exchangeAuthorizationCode`, with `redirect_uri` when given):
///    `invalid_grant` and other permanent answers are final (`code_rejected`, never retried);
///    `invalid_client` is `configuration_error`; transient failures are retried only while the
///    code can still be valid (`codeLifetime` after the token's `iat`), then `code_rejected`
///    (`apple_unavailable`); the returned `id_token` must name Apple, the client and the same
///    `sub` (`returnedSub`);
/// 4. the account and its sealed refresh token (`SignInStore.store`): `created` or `linked`.
/// The outcome statement wipes the code, identity token and nonce and sends NOTIFY
/// `siwa_sign_ins`. Rejections and outcomes are item successes (the exchange ran as it should);
/// `configuration_error` and `conflict` fail the item, so `work --drain` exits 1.
public struct SignInHandler: JobHandler {
    public static let kind = "sign-in"
    public var kind: String { Self.kind }

    /// How long an authorization code can be valid after the identity token's `iat` (Apple: five
    /// minutes).
    public static let codeLifetime: Duration = .seconds(300)

    let pool: PostgresPool
    let registry: AppleClientRegistry
    let keyring: TokenKeyring
    let keys: JWKSCache
    let leeway: Duration
    let clock: any WallClock
    let store: SignInStore

    /// - Parameters:
    ///   - keys: Apple's JWKS (shared with notification processing: one cache, one refetch rule).
    ///   - leeway: clock skew tolerated on `exp` and `iat` (default 60 s).
    ///   - clock: verification time and the code's window.
    public init(pool: PostgresPool, registry: AppleClientRegistry, keyring: TokenKeyring, keys: JWKSCache,
                leeway: Duration = .seconds(60), clock: any WallClock = SystemClock()) {
        self.pool = pool
        self.registry = registry
        self.keyring = keyring
        self.keys = keys
        self.leeway = leeway
        self.clock = clock
        self.store = SignInStore(pool: pool)
    }

    public var writes: KindWrites { .appleCalls(effect: nil) }

    public func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
        let ids = items.map { SignInRow.id(inPayload: $0.payload) }
        let rows = try await SignInRow.load(ids.compactMap { $0 }, pool: pool)
        return zip(items, ids).map { item, id -> @Sendable () async -> ItemOutcome in
            guard let id, let row = rows[id] else {
                let result = SignInVerdict(.configurationError, reason: "no_sign_in", detail: "item payload names no stored sign-in").result
                return { .failed(result, audit: nil, effect: nil) }
            }
            if row.processed || row.identityToken == nil || row.code == nil {
                return { .succeeded(ResultRecord(SignInOutcome.alreadyProcessed, detail: jsonObject(["sign_in_id": String(id)])),
                                    audit: nil, effect: nil) }
            }
            return { await self.process(row, item: item) }
        }
    }
}
