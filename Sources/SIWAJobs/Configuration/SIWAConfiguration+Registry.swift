import AppleID
import Clocks
import SIWACore

extension SIWAConfiguration {
    /// The process's one Apple client registry: a client (with its own client-secret provider)
    /// for every team and client of `allCredentials()`, all on `transport` and `clock` (client-secret
    /// minting and expiry, HTTP-date `Retry-After`). Each client of a team awaits `gate(teamID)`
    /// before its calls (the team's shared rate budget, `RateBudgets.gate(teamID:)`; nil: none).
    /// - Throws: `ConfigurationError` from `allCredentials()`, or for an unusable
    ///   `SIWA_APPLE_BASE_URL` when any team is configured.
    public func appleClientRegistry(transport: any HTTPTransport, clock: any WallClock,
                                    gate: (String) -> (any RequestGate)? = { _ in nil }) throws(ConfigurationError) -> AppleClientRegistry {
        let credentials = try allCredentials()
        guard !credentials.isEmpty else { return AppleClientRegistry([]) }
        let baseURL = try validatedAppleBaseURL()
        return AppleClientRegistry(credentials.map { c in
            (teamID: c.teamID, client: AppleIDClient(baseURL: baseURL, transport: transport,
                                                    secrets: ClientSecretProvider(credentials: c, clock: clock), clock: clock,
                                                    gate: gate(c.teamID)))
        })
    }
}
