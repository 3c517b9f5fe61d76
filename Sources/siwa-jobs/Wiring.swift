import AppleID
import Clocks
import Postgres
import Queue
import SIWACore
import SIWAJobs

/// The one wiring point of a `work` process: it builds ONE HTTP transport, ONE Apple client
/// registry (every team of `SIWA_TEAMS_FILE` plus the single team) and ONE PostgreSQL pool, and
/// hands them to every job kind, with the process's one clock.
struct WorkerWiring {
    let pool: PostgresPool
    let transport: CurlTransport
    /// Every Apple call of this process, counted for `--metrics-port` / `--metrics-file`.
    let appleCalls: AppleCallMetrics
    let registry: AppleClientRegistry
    /// Every team's shared Apple rate budget (README "Apple's rate budget").
    let budgets: RateBudgets
    let handlers: [any JobHandler]
    /// Kinds this process cannot run, with why (a drain with their work due exits 78 naming them).
    let unavailableKinds: [String: String]

    /// Connects, checks the schema, then builds the kinds: no-op and the transfers always (a
    /// transfer job for a team without credentials is paused, naming `SIWA_TEAMS_FILE`);
    /// refresh-validation, revocation-sweep and notification processing when the single team is
    /// configured (partial configuration is an error; none is a warning).
    /// - Throws: `DatabaseError` (unreachable), `ConfigurationError` (schema not migrated, or a
    ///   setting: the teams file's errors first).
    static func make(configuration: SIWAConfiguration, poolSize: Int, logger: Logger,
                     clock: any WallClock) async throws -> WorkerWiring {
        if let warning = configuration.appleBaseURLWarning {
            logger.warning("Apple base URL is not Apple's", ["warning": warning])
        }
        let httpVersion = try configuration.appleHTTPVersion()
        let pool = PostgresPool(configuration: configuration.postgres, size: poolSize)
        do {
            try await SchemaPreflight.check(pool: pool, clock: clock)
            let transport = try configuration.httpTransport(httpVersion: httpVersion)   // SIWA_CA_FILE besides the system store
            let appleCalls = AppleCallMetrics()
            let budgets = RateBudgets(ceilings: try configuration.appleRateCeilings(), store: PostgresRateBudgetStore(pool: pool),
                                      clock: clock, logger: logger)
            let registry = try configuration.appleClientRegistry(transport: appleCalls.instrument(transport), clock: clock, gate: budgets.gate(teamID:))
            var handlers: [any JobHandler] = [NoopHandler()]
            var unavailable: [String: String] = [:]
            if configuration.hasSingleTeamCredentials {
                handlers += try singleTeamHandlers(configuration: configuration, pool: pool, registry: registry,
                                                   transport: transport, clock: clock)
            } else {
                let why = "no Apple credentials configured (SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_CLIENT_ID, SIWA_KEY_FILE)"
                for kind in [RefreshValidationHandler.kind, RevocationSweepHandler.kind, NotificationProcessingHandler.kind,
                             SignInHandler.kind] {
                    unavailable[kind] = why
                }
                logger.warning("refresh-validation, revocation-sweep, notification-processing and sign-in disabled", ["reason": why])
            }
            let tokens = MigrationTokens(clock: clock)
            handlers += [
                TransferExportHandler(pool: pool, registry: registry, tokens: tokens, clock: clock),
                TransferImportHandler(pool: pool, registry: registry, tokens: tokens, clock: clock),
            ]
            return WorkerWiring(pool: pool, transport: transport, appleCalls: appleCalls, registry: registry, budgets: budgets, handlers: handlers,
                                unavailableKinds: unavailable)
        } catch {
            await pool.close()
            throw error
        }
    }

    /// Refresh validation, revocation sweep, notification processing and sign-ins for the single
    /// team. Notifications and identity tokens are verified with Apple's JWKS (`verificationKeysURL`:
    /// pinned to Apple unless `SIWA_SANDBOX_MODE=1`; one cache), notifications for `aud` =
    /// `SIWA_CLIENT_ID` or any of `SIWA_NOTIFICATION_CLIENT_IDS`, sign-ins for the sign-in's client
    /// id (which needs credentials: any team of the registry).
    private static func singleTeamHandlers(configuration: SIWAConfiguration, pool: PostgresPool, registry: AppleClientRegistry,
                                           transport: CurlTransport, clock: any WallClock) throws -> [any JobHandler] {
        let credentials = try configuration.credentials()
        let keyring = try configuration.keyring()
        guard let client = registry.client(teamID: credentials.teamID, clientID: credentials.clientID) else {
            throw ConfigurationError("team \(credentials.teamID) client \(credentials.clientID) has no Apple client")
        }
        let refetch = try configuration.jwksRefetchInterval()
        let verifier: JWTVerifier
        let cache = JWKSCache(provider: configuration.verificationKeysProvider(client: client, transport: transport),
                              minimumRefetchInterval: refetch, clock: clock)
        do {
            verifier = try JWTVerifier(keys: cache, clientIDs: configuration.notificationClientIDs(primary: credentials.clientID),
                                       clock: clock)
        } catch {
            throw ConfigurationError("\(error)", setting: "SIWA_CLIENT_ID / SIWA_NOTIFICATION_CLIENT_IDS")
        }
        return [
            RefreshValidationHandler(pool: pool, registry: registry, keyring: keyring),
            RevocationSweepHandler(pool: pool, registry: registry, keyring: keyring),
            NotificationProcessingHandler(pool: pool, verifier: verifier, teamID: credentials.teamID),
            SignInHandler(pool: pool, registry: registry, keyring: keyring, keys: cache, clock: clock),
        ]
    }

    /// Ends the rate budgets' waits, closes the pool and stops the transport's thread.
    func close() async {
        await budgets.shutdown()
        await pool.close()
        transport.shutdown()
    }
}
