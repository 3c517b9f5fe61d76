import AppleID
import Commands

/// The environment variables commands read, for their help (what each means is resolved in
/// `SIWAConfiguration`).
enum EnvironmentDocs {
    static let database = EnvironmentVariable(
        "DATABASE_URL | PG*", "PostgreSQL: a postgres:// URI or key=value conninfo; unset: libpq reads PGHOST, PGPORT, "
            + "PGUSER, PGDATABASE, PGPASSWORD")
    static let appleBaseURL = EnvironmentVariable(
        "SIWA_APPLE_BASE_URL", "Apple's base URL (default https://appleid.apple.com; plain http only to a loopback address, "
            + "127.0.0.0/8 or [::1]: the sandbox)")
    static let caFile = EnvironmentVariable(
        "SIWA_CA_FILE", "PEM file of CA certificates trusted for HTTPS in addition to the system store (a private CA, the "
            + "sandbox's: sandbox --tls prints its path); verification cannot be turned off")
    static let httpVersion = EnvironmentVariable(
        "SIWA_HTTP_VERSION", "HTTP version toward Apple: 1.1 (keep-alive) or 2 (multiplexed over TLS); default "
            + "\(HTTPVersion.default.rawValue)")
    static let keyPermissions = EnvironmentVariable(
        "SIWA_ALLOW_INSECURE_KEY_PERMISSIONS", "1: load key files that group or others may access (default: refused)")
    static let singleTeam = [
        EnvironmentVariable("SIWA_TEAM_ID", "the team ID (10 characters A-Z, 0-9)"),
        EnvironmentVariable("SIWA_KEY_ID", "the key ID (kid) of the team's .p8 key"),
        EnvironmentVariable("SIWA_CLIENT_ID", "the client ID: App ID (bundle ID) or Services ID"),
        EnvironmentVariable("SIWA_KEY_FILE | SIWA_PRIVATE_KEY", "the .p8 key: a path, or the PEM itself"),
    ]
    static let teamsFile = EnvironmentVariable(
        "SIWA_TEAMS_FILE", "JSON list of teams ({team_id, key_id, key_file, client_ids, optional rate_limit_rps}) for "
            + "transfers between teams")
    static let rateLimit = EnvironmentVariable(
        "SIWA_APPLE_RATE_LIMIT", "Apple rate ceiling per team and endpoint, requests/s over all workers of the team, "
            + "unless the teams file gives the team its rate_limit_rps (default 0 = unlimited: no rate budget)")
    static let tokenKey = [
        EnvironmentVariable("SIWA_TOKEN_KEY_FILE | SIWA_TOKEN_KEY",
                            "AES-256-GCM key for refresh tokens at rest: 64 hex chars or base64 of 32 bytes"),
        EnvironmentVariable("SIWA_TOKEN_KEY_ID", "key id stored beside each ciphertext (default k1)"),
        EnvironmentVariable("SIWA_TOKEN_KEYS_PREVIOUS", "older keys, id:key,id:key, to open tokens sealed before a rotation"),
    ]
    static let notifications = [
        EnvironmentVariable("SIWA_NOTIFICATION_CLIENT_IDS", "more accepted notification audiences besides SIWA_CLIENT_ID (comma-separated)"),
        EnvironmentVariable("SIWA_JWKS_REFETCH_SECONDS", "least seconds between two fetches of Apple's JWKS (default 60, 0...3600)"),
    ]
    static let logging = [
        EnvironmentVariable("SIWA_LOG_LEVEL", "debug, info (default), warning or error"),
        EnvironmentVariable("SIWA_LOG_FORMAT", "json or text (default: JSON lines unless stderr is a terminal)"),
    ]
    static let safetyStop = EnvironmentVariable(
        "SIWA_SAFETY_STOP_PERCENT", "default of --safety-stop: 0...99 or off (default 50)")
    static let user = EnvironmentVariable("USER", "recorded as created_by unless --created-by is given")

    /// Everything the worker reads.
    static let worker = [database, appleBaseURL, caFile, httpVersion] + singleTeam + [teamsFile, rateLimit] + tokenKey + [keyPermissions]
        + notifications + logging
}
