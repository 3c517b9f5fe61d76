import AppleID
import Foundation
import Postgres
import Queue
import SIWAJobs

extension WorkCommand {
    /// The revocation-sweep and notification-processing kinds, when Apple credentials are
    /// configured (the same settings as refresh-validation; partial configuration is an error).
    /// Notifications are verified against `GET {SIWA_APPLE_BASE_URL}/auth/keys`, for `aud` =
    /// `SIWA_CLIENT_ID` or any of `SIWA_NOTIFICATION_CLIENT_IDS` (comma-separated, e.g. the
    /// Services ID next to the App ID).
    static func notificationHandlers(settings: Settings, pool: PostgresPool) throws -> [any JobHandler] {
        let names = ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE", "SIWA_PRIVATE_KEY"]
        guard names.contains(where: { settings.value($0) != nil }) else { return [] }
        let credentials = try settings.credentials()
        let keyring = try settings.keyring()
        let client = AppleIDClient(baseURL: try settings.validatedAppleBaseURL(), transport: CurlTransport(),
                                   secrets: ClientSecretProvider(credentials: credentials))
        let registry = AppleClientRegistry([(teamID: credentials.teamID, client: client)])
        let verifier: JWTVerifier
        do {
            let cache = JWKSCache(provider: JWKSProviders.apple(client), minimumRefetchInterval: .seconds(fractional: try settings.jwksRefetchSeconds()))
            verifier = try JWTVerifier(keys: cache,
                                       clientIDs: settings.notificationClientIDs(primary: credentials.clientID))
        } catch {
            throw ConfigError(message: "SIWA_CLIENT_ID / SIWA_NOTIFICATION_CLIENT_IDS: \(error)")
        }
        return [
            RevocationSweepHandler(pool: pool, registry: registry, keyring: keyring),
            NotificationProcessingHandler(pool: pool, verifier: verifier, teamID: credentials.teamID),
        ]
    }
}

extension Settings {
    /// `SIWA_JWKS_REFETCH_SECONDS`: least time between two JWKS fetches, seconds (default 60, 0...3600).
    func jwksRefetchSeconds() throws -> Double {
        guard let text = value("SIWA_JWKS_REFETCH_SECONDS") else { return 60 }
        guard let seconds = Double(text), seconds.isFinite, (0...3600).contains(seconds) else {
            throw ConfigError(message: "SIWA_JWKS_REFETCH_SECONDS: expected seconds from 0 to 3600, got '\(text)'")
        }
        return seconds
    }

    /// `primary` plus the comma-separated `SIWA_NOTIFICATION_CLIENT_IDS`, without duplicates.
    func notificationClientIDs(primary: String) -> [String] {
        var ids = [primary]
        for id in (value("SIWA_NOTIFICATION_CLIENT_IDS") ?? "").split(separator: ",") {
            let trimmed = id.trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty, !ids.contains(trimmed) { ids.append(trimmed) }
        }
        return ids
    }
}
