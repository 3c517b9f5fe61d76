import Clocks
import Synchronization

/// The sandbox's state: teams (keys and client IDs), refresh tokens, bearer tokens, the
/// verified-client-secret cache and counters. Thread-safe; every method may be called from any thread.
///
/// Every instant the model uses (client-secret `exp`/`iat` checks, token and bearer expiry,
/// id_token and notification `iat`/`exp`, the 60-day migration window) is read from `clock`.
public final class SandboxModel: Sendable {
    struct Team {
        var keys: [String: any ES256Verifying] = [:]
        var clientIDs: Set<String> = []
    }

    struct RefreshRecord {
        var teamID: String
        var clientID: String
        var sub: String
        var revoked: Bool
        /// `/auth/revoke` calls naming this token (including repeats after it was revoked).
        var revokeRequests: Int = 0
    }

    /// A `client_credentials` access token; kept for the `user.migration` endpoints.
    struct BearerRecord {
        var teamID: String
        var clientID: String
        var scope: String
        /// Seconds since 1970.
        var expiresAt: Double
    }

    /// A client secret that already passed verification, valid until `exp`.
    struct VerifiedSecret {
        var teamID: String
        var clientID: String
        var exp: Double
    }

    struct Registry {
        var teams: [String: Team] = [:]
        var refreshTokens: [String: RefreshRecord] = [:]
        var bearerTokens: [String: BearerRecord] = [:]
        var secretCache: [String: VerifiedSecret] = [:]
        var revokesOfUnknownTokens = 0
    }

    /// Upper bound on cached verified secrets; the cache is emptied when it is reached.
    static let secretCacheLimit = 50_000

    let registry = Mutex(Registry())
    /// The client secret verified (or found in `secretCache`) last, with its verification.
    let lastSecret = Mutex<(secret: String, verified: VerifiedSecret)?>(nil)
    let counters = Mutex(SandboxStats())
    /// App-transfer users, transfers, issued transfer identifiers and the clock offset.
    let migration = Mutex(MigrationRegistry())
    /// Authorization codes issued by `/__sandbox/authorize` and their single use.
    let authorizations = Mutex(AuthorizationRegistry())
    /// The most recent access tokens handed out (at most `issuedAccessTokenLimit`), so tests can
    /// prove none of them reached logs, results or views.
    let recentAccessTokens = Mutex<[String]>([])
    static let issuedAccessTokenLimit = 20_000
    /// Opt-in log of `/auth/*` requests (`startRequestLog`), off by default.
    let requestLog = SandboxRequestLog()
    let keyLoader: @Sendable (String) throws -> any ES256Verifying
    /// The sandbox's wall clock (before `clockOffset`).
    public let clock: any WallClock

    /// A model with no teams and no tokens; team public keys are parsed with SIWACrypto.
    /// - Parameter clock: the source of every instant the model reads (default the system clock).
    public convenience init(clock: any WallClock = SystemClock()) {
        self.init(keyLoader: SandboxModel.defaultKeyLoader, clock: clock)
    }

    init(keyLoader: @escaping @Sendable (String) throws -> any ES256Verifying, clock: any WallClock = SystemClock()) {
        self.keyLoader = keyLoader
        self.clock = clock
    }

    /// The clock's current instant, seconds since 1970 (without `clockOffset`).
    var now: Double { clock.now.timeIntervalSince1970 }

    /// Registers a team key and client IDs, or adds them to an existing team.
    ///
    /// - Parameters:
    ///   - teamID: Apple Team ID (the client secret's `iss`).
    ///   - keyID: the key's ID (the client secret header's `kid`).
    ///   - publicKeyPEM: the P-256 public key, `-----BEGIN PUBLIC KEY-----` (SPKI) PEM.
    ///   - clientIDs: App IDs / Services IDs the team may authenticate as (the secret's `sub`).
    /// - Throws: `SandboxAdminError` if the PEM is not a P-256 public key or an ID is empty.
    public func registerTeam(teamID: String, keyID: String, publicKeyPEM: String, clientIDs: [String]) throws {
        guard !teamID.isEmpty else { throw SandboxAdminError(field: "team_id", reason: "must not be empty") }
        guard !keyID.isEmpty else { throw SandboxAdminError(field: "key_id", reason: "must not be empty") }
        if clientIDs.contains(where: \.isEmpty) {
            throw SandboxAdminError(field: "client_ids", reason: "must not contain empty strings")
        }
        let key: any ES256Verifying
        do {
            key = try keyLoader(publicKeyPEM)
        } catch {
            throw SandboxAdminError(field: "public_key_pem", reason: "not a P-256 public key PEM (\(error))")
        }
        registry.withLock { reg in
            var team = reg.teams[teamID] ?? Team()
            team.keys[keyID] = key
            team.clientIDs.formUnion(clientIDs)
            reg.teams[teamID] = team
        }
    }

    /// Adds (or replaces) refresh tokens. `revoked: true` registers a token Apple already invalidated.
    public func registerRefreshTokens(_ tokens: [SandboxRefreshToken]) {
        registry.withLock { reg in
            reg.refreshTokens.reserveCapacity(reg.refreshTokens.count + tokens.count)
            for t in tokens {
                reg.refreshTokens[t.token] = RefreshRecord(teamID: t.teamID, clientID: t.clientID,
                                                           sub: t.sub, revoked: t.revoked)
            }
        }
    }

    /// Ground truth over registered refresh tokens of one team and client.
    public func truth(teamID: String, clientID: String) -> SandboxTruth {
        registry.withLock { reg in
            var truth = SandboxTruth()
            for record in reg.refreshTokens.values where record.teamID == teamID && record.clientID == clientID {
                if record.revoked { truth.revoked += 1 } else { truth.valid += 1 }
                truth.revokeRequests += record.revokeRequests
                if record.revokeRequests > 1 { truth.tokensRevokedMoreThanOnce += 1 }
            }
            return truth
        }
    }

    /// How many `/auth/revoke` calls named this refresh token (0 if unknown).
    public func revokeRequests(token: String) -> Int {
        registry.withLock { $0.refreshTokens[token]?.revokeRequests ?? 0 }
    }

    /// Whether a registered refresh token is currently revoked (`nil` if unknown).
    public func isRevoked(token: String) -> Bool? {
        registry.withLock { $0.refreshTokens[token]?.revoked }
    }

    /// A copy of the counters.
    public func stats() -> SandboxStats {
        counters.withLock { $0 }
    }

    /// Zeroes the counters (registered teams and tokens are kept).
    public func resetStats() {
        counters.withLock { $0 = SandboxStats() }
    }
}

/// One refresh token to register with the sandbox.
public struct SandboxRefreshToken: Sendable, Equatable {
    public var token: String
    public var teamID: String
    public var clientID: String
    /// The team-scoped user identifier returned in id_tokens.
    public var sub: String
    public var revoked: Bool

    public init(token: String, teamID: String, clientID: String, sub: String, revoked: Bool = false) {
        self.token = token
        self.teamID = teamID
        self.clientID = clientID
        self.sub = sub
        self.revoked = revoked
    }
}

/// Counts over the registered refresh tokens of one team and client.
public struct SandboxTruth: Sendable, Equatable {
    public var valid = 0
    public var revoked = 0
    /// Sum of `/auth/revoke` calls naming these tokens.
    public var revokeRequests = 0
    /// Tokens named by more than one `/auth/revoke` call.
    public var tokensRevokedMoreThanOnce = 0
    public init() {}
}

/// A bad admin API request; `description` names the field.
public struct SandboxAdminError: Error, CustomStringConvertible, Sendable {
    public var field: String
    public var reason: String
    public var description: String { "\(field): \(reason)" }
}
