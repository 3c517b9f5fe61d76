import AppleID
import Foundation
import Postgres
import SIWACrypto
import SIWAJobs

/// `siwa-jobs doctor`: checks the configuration without calling Apple and names each problem:
/// `SIWA_TEAMS_FILE` when set (every team's key file loads, IDs valid, no duplicates; the
/// single-team variables are then optional), the key (loads, P-256), team ID / key ID / client ID formats, the token encryption key, the
/// Apple base URL, database reachability, clock skew against the database, and pending migrations.
/// Exit 0 when all pass, 78 when any configuration check fails, 75 when only the database is unreachable.
enum DoctorCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: [])
        try args.noPositionals("doctor")
        var problems = 0
        var databaseDown = false
        func check(_ name: String, _ body: () throws -> String) {
            do { say("ok    \(name): \(try body())") } catch {
                problems += 1
                say("FAIL  \(name): \(error)")
            }
        }
        let teamsFile = settings.value("SIWA_TEAMS_FILE")
        if let path = teamsFile {
            check("teams file (SIWA_TEAMS_FILE)") { try teamsFileCheck(settings, path: path) }
        }
        let singleNames = ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE", "SIWA_PRIVATE_KEY"]
        if teamsFile != nil && !singleNames.contains(where: { settings.value($0) != nil }) {
            say("skip  single team (SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_CLIENT_ID, SIWA_KEY_FILE): not set; transfers use "
                + "SIWA_TEAMS_FILE, refresh-validation stays disabled")
        } else {
            check("team ID (SIWA_TEAM_ID)") { try format(settings.value("SIWA_TEAM_ID"), "SIWA_TEAM_ID", what: "team ID") }
            check("key ID (SIWA_KEY_ID)") { try format(settings.value("SIWA_KEY_ID"), "SIWA_KEY_ID", what: "key ID") }
            check("client ID (SIWA_CLIENT_ID)") {
                guard let client = settings.value("SIWA_CLIENT_ID") else { throw ConfigError(message: "not set") }
                guard !client.contains(where: \.isWhitespace) else { throw ConfigError(message: "contains whitespace") }
                guard client != settings.value("SIWA_TEAM_ID") else {
                    throw ConfigError(message: "equals the team ID; the client ID is the App ID (bundle ID) or Services ID")
                }
                return client
            }
            var key: P256PrivateKey?
            check(".p8 key (SIWA_KEY_FILE / SIWA_PRIVATE_KEY)") {
                key = try settings.privateKey()
                return "loads, EC P-256"
            }
            if key != nil {
                check("client secret") {
                    let minted = try mintCheck(try settings.credentials())
                    return "mints ES256 with a 64-byte R||S signature (fingerprint \(minted))"
                }
            }
        }
        check("token encryption key (SIWA_TOKEN_KEY_FILE / SIWA_TOKEN_KEY)") {
            let ring = try settings.keyring()
            let probe = try ring.seal("probe", accountAAD: "0")
            _ = try ring.open(probe.ciphertext, keyID: probe.keyID, accountAAD: "0")
            return "AES-256-GCM, key id \(ring.current.keyID)"
        }
        check("Apple base URL (SIWA_APPLE_BASE_URL)") {
            let url = try settings.validatedAppleBaseURL()
            return url + (url.hasPrefix("http:") ? " (local sandbox)" : "")
        }
        check("logging (SIWA_LOG_LEVEL, SIWA_LOG_FORMAT)") {
            try settings.validateLogging()
            return "ok"
        }
        do {
            let connection = try await PostgresConnection.connect(settings.postgres)
            defer { connection.close() }
            say("ok    database: \(settings.postgres.redactedDescription)")
            let rows = try await connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
            let dbNow: Double = try rows.first?.decode("now") ?? 0
            let skew = Date().timeIntervalSince1970 - dbNow
            if abs(skew) > 30 {
                problems += 1
                say(String(format: "FAIL  clock: local clock differs from the database by %.1f s; client secrets use iat/exp, fix NTP", skew))
            } else {
                say(String(format: "ok    clock: skew against the database %.3f s", skew))
            }
            let migrations = try await Migrator().status(on: connection)
            if migrations.pending.isEmpty && migrations.changed.isEmpty {
                say("ok    migrations: all applied" + (migrations.unknown.isEmpty ? "" :
                    " (the database also has \(migrations.unknown.joined(separator: ", ")), newer than this binary)"))
            }
            if !migrations.pending.isEmpty {
                problems += 1
                say("FAIL  migrations: not applied: \(migrations.pending.joined(separator: ", ")) (run 'siwa-jobs migrate')")
            }
            if !migrations.changed.isEmpty {
                problems += 1
                say("FAIL  migrations: applied with different text than this binary's: \(migrations.changed.joined(separator: ", "))")
            }
            if migrations.pending.isEmpty, let ring = try? settings.keyring() {
                problems += try await checkStoredToken(connection, keyring: ring)
            }
        } catch let error as DatabaseError {
            databaseDown = true
            say("FAIL  database: \(settings.postgres.redactedDescription): \(error)")
        }
        if problems > 0 { return 78 }
        return databaseDown ? 75 : 0
    }

    /// Opens one stored refresh token (if any) with the configured keys: a wrong token key is
    /// caught here rather than by a failed night. Returns the number of problems found (0 or 1).
    static func checkStoredToken(_ connection: PostgresConnection, keyring: TokenKeyring) async throws -> Int {
        let rows = try await connection.query("""
            SELECT id, refresh_token_ciphertext, refresh_token_key_id FROM siwa.accounts
            WHERE refresh_token_ciphertext IS NOT NULL ORDER BY id DESC LIMIT 1
            """)
        guard let row = rows.first else {
            say("ok    stored tokens: none yet")
            return 0
        }
        let id: Int64 = try row.decode("id")
        let keyID: String = try row.decode("refresh_token_key_id")
        do {
            _ = try keyring.open(try row.decode("refresh_token_ciphertext"), keyID: keyID, accountAAD: String(id))
            say("ok    stored tokens: a sample (account \(id), key id \(keyID)) decrypts with the configured keys")
            return 0
        } catch {
            say("FAIL  stored tokens: account \(id) (key id \(keyID)) does not decrypt with the configured keys: \(error)")
            return 1
        }
    }

    /// Every team and client of `SIWA_TEAMS_FILE`: the file parses, IDs are valid, each key file
    /// exists and loads, and each mints a client secret that verifies. Returns the summary line.
    /// - Throws: `ConfigError` naming the entry and field.
    static func teamsFileCheck(_ settings: Settings, path: String) throws -> String {
        let all = try settings.teamsFile(path)
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
    static func mintCheck(_ credentials: AppleCredentials) throws -> String {
        let minted = try ClientSecret.mint(credentials: credentials, now: Date(), lifetime: .seconds(300))
        let parts = try JWS.split(minted.token)
        guard parts.signature.count == 64,
              credentials.privateKey.publicKey.verifyES256(signature: parts.signature, message: parts.signingInput) else {
            throw ConfigError(message: "team \(credentials.teamID) client \(credentials.clientID): a minted secret does not "
                + "verify against the key's own public key")
        }
        return Fingerprint.of(minted.token)
    }

    /// Team IDs and key IDs are 10 characters of A-Z and 0-9.
    static func format(_ value: String?, _ name: String, what: String) throws -> String {
        guard let value else { throw ConfigError(message: "\(name) is not set") }
        guard value.count == 10, value.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
            throw ConfigError(message: "\(name) '\(value)' is not a \(what): expected 10 characters A-Z and 0-9")
        }
        return value
    }
}
