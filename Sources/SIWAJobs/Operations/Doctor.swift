import AppleID
import Clocks
import Foundation
import SIWACore
import SIWACrypto

/// `siwa-jobs doctor`: checks the configuration without calling Apple and names each problem:
/// `SIWA_TEAMS_FILE` when set (every team's key file loads, IDs valid, no duplicates; the
/// single-team variables are then optional), the key (loads, P-256, mints a secret that
/// verifies), team ID / key ID / client ID formats, the token encryption key, the Apple base URL,
/// `SIWA_CA_FILE` when set, logging, database reachability, clock skew against the database, pending or changed
/// migrations, whether a stored token opens with the configured keys, and (warnings) key files
/// that group or others may access and live workers running another version than this binary.
public struct Doctor: Sendable {
    let configuration: SIWAConfiguration
    let clock: any WallClock
    /// This binary's version, compared with the live workers' (`siwa.live_workers`).
    let version: String
    /// Key files that group or others may access (`SIWAConfiguration.insecureKeyFileWarnings()`).
    let keyFileWarnings: [String]

    /// - Parameters:
    ///   - clock: the local clock compared with the database's, and the time client secrets are
    ///     minted at.
    ///   - version: this binary's version string.
    public init(configuration: SIWAConfiguration, clock: any WallClock, version: String) {
        // Key files load whatever their mode (the other checks still run); the mode is a warning.
        self.configuration = configuration.allowingInsecureKeyPermissions()
        self.keyFileWarnings = configuration.insecureKeyFileWarnings()
        self.clock = clock
        self.version = version
    }

    /// Runs every check. Database failures are in the report, not thrown.
    /// - Throws: only errors that are not about the configuration or the database (unexpected).
    public func run() async throws -> DoctorReport {
        var report = DoctorReport()
        checkCredentials(&report)
        for warning in keyFileWarnings { report.warn("key file permissions", warning) }
        checkKeysAndSettings(&report)
        try await checkDatabase(&report)
        return report
    }

    private func checkCredentials(_ report: inout DoctorReport) {
        let settings = configuration
        if let path = settings.teamsFilePath {
            report.check("teams file (SIWA_TEAMS_FILE)") { try teamsFileSummary(path: path) }
        }
        if settings.teamsFilePath != nil && !settings.hasSingleTeamCredentials {
            report.skip("single team (SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_CLIENT_ID, SIWA_KEY_FILE)",
                        "not set; transfers use SIWA_TEAMS_FILE, refresh-validation stays disabled")
            return
        }
        report.check("team ID (SIWA_TEAM_ID)") {
            try IdentifierFormat.tenCharacterID(settings.value("SIWA_TEAM_ID"), setting: "SIWA_TEAM_ID", what: "team ID")
        }
        report.check("key ID (SIWA_KEY_ID)") {
            try IdentifierFormat.tenCharacterID(settings.value("SIWA_KEY_ID"), setting: "SIWA_KEY_ID", what: "key ID")
        }
        report.check("client ID (SIWA_CLIENT_ID)") {
            guard let client = settings.value("SIWA_CLIENT_ID") else { throw ConfigurationError("not set") }
            guard AppleIdentifier.isClientID(client) else {
                throw ConfigurationError("'\(IdentifierFormat.printable(client))' is not a client ID: printable ASCII without "
                    + "spaces, at most 255 characters (jobs, sign-ins and imports refuse it)")
            }
            guard client != settings.value("SIWA_TEAM_ID") else {
                throw ConfigurationError("equals the team ID; the client ID is the App ID (bundle ID) or Services ID")
            }
            return client
        }
        var keyLoads = false
        report.check(".p8 key (SIWA_KEY_FILE / SIWA_PRIVATE_KEY)") {
            _ = try settings.privateKey()
            keyLoads = true
            return "loads, EC P-256"
        }
        if keyLoads {
            report.check("client secret") {
                "mints ES256 with a 64-byte R||S signature (fingerprint \(try mintCheck(try settings.credentials())))"
            }
        }
    }

    private func checkKeysAndSettings(_ report: inout DoctorReport) {
        let settings = configuration
        report.check("token encryption key (SIWA_TOKEN_KEY_FILE / SIWA_TOKEN_KEY)") {
            let ring = try settings.keyring()
            let probe = try ring.seal("probe", accountAAD: "0")
            _ = try ring.open(probe.ciphertext, keyID: probe.keyID, accountAAD: "0")
            return "AES-256-GCM, key id \(ring.current.keyID)"
        }
        report.check("Apple base URL (SIWA_APPLE_BASE_URL)") {
            let url = try settings.validatedAppleBaseURL()
            return url + (url.hasPrefix("http:") ? " (local sandbox)" : "")
        }
        if let warning = settings.appleBaseURLWarning { report.warn("Apple base URL is not Apple's", warning) }
        if settings.value(SIWAConfiguration.caFileVariable) != nil {
            report.check("extra CA file (SIWA_CA_FILE)") {
                "\(try settings.caFile() ?? ""), trusted besides the system store"
            }
        }
        report.check("HTTP version toward Apple (SIWA_HTTP_VERSION)") { "\(try settings.appleHTTPVersion())" }
        report.check("logging (SIWA_LOG_LEVEL, SIWA_LOG_FORMAT)") {
            try settings.validateLogging()
            return "ok"
        }
    }

    /// Every team and client of the teams file: the file parses, IDs are valid, each key file
    /// exists and loads, and each mints a client secret that verifies. Returns the summary.
    /// - Throws: `ConfigurationError` naming the entry and field.
    func teamsFileSummary(path: String) throws -> String {
        let all = try configuration.teamsFile(path)
        var teams: [String] = []
        for credentials in all where !teams.contains(credentials.teamID) { teams.append(credentials.teamID) }
        let summary = try teams.map { team -> String in
            let mine = all.filter { $0.teamID == team }
            for credentials in mine { _ = try mintCheck(credentials) }
            return "\(team) (key \(mine.first?.keyID ?? "?"), clients \(mine.map(\.clientID).joined(separator: ", ")))"
        }
        return "\(teams.count) team\(teams.count == 1 ? "" : "s"), keys load and mint ES256 secrets: "
            + summary.joined(separator: "; ")
    }

    /// Mints a short-lived client secret and verifies it with the key's own public key.
    /// - Returns: the secret's fingerprint (safe to print).
    /// - Throws: `ConfigurationError` when the secret does not verify; minting errors.
    func mintCheck(_ credentials: AppleCredentials) throws -> String {
        let minted = try ClientSecret.mint(credentials: credentials, now: clock.now, lifetime: .seconds(300))
        let parts = try JWS.split(minted.token)
        guard parts.signature.count == 64,
              credentials.privateKey.publicKey.verifyES256(signature: parts.signature, message: parts.signingInput) else {
            throw ConfigurationError("team \(credentials.teamID) client \(credentials.clientID): a minted secret does not "
                + "verify against the key's own public key")
        }
        return Fingerprint.of(minted.token)
    }
}
