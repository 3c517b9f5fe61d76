import Clocks
import Foundation
import TestSupport
import Postgres
import SIWACrypto
import SIWAJobs
import Sandbox

/// Everything an end-to-end test needs: a fresh migrated database, an in-process sandbox on
/// 127.0.0.1 (real HTTPS with its own throwaway CA, which workers trust through `SIWA_CA_FILE`;
/// plain HTTP with `tls: false`), a team key written as a `.p8` file, a token encryption key, and
/// seeded accounts whose refresh tokens the sandbox knows. Workers run as real subprocesses.
struct SIWAWorld {
    static let teamID = "TEAMA12345"
    static let keyID = "KEYA123456"
    static let clientID = "com.example.siwa"

    let database: TestDatabase
    let sandbox: SandboxServer
    let directory: URL
    let keyFile: String
    let tokenKeyHex: String
    let privateKey: P256PrivateKey
    var seeded: SeedReport?

    /// - Parameter tls: how the sandbox serves HTTPS (default: a certificate for 127.0.0.1 and
    ///   localhost, its CA written to the world's directory); nil for plain HTTP (tests that speak
    ///   raw HTTP to it).
    static func create(latency: LatencyDistribution = .none, registerKey: Bool = true,
                       tls: SandboxTLS? = SandboxTLS()) async throws -> SIWAWorld {
        let database = try await TestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-world-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = SandboxConfiguration(latency: latency)
        configuration.tls = tls.map { SandboxTLS(directory: directory.path, serverName: $0.serverName, expired: $0.expired) }
        let sandbox = SandboxServer(configuration: configuration)
        _ = try sandbox.start()
        let key = try P256PrivateKey.generate()
        let keyFile = directory.appendingPathComponent("AuthKey_\(keyID).p8").path
        try PrivateFile.write(key.pkcs8PEM, to: keyFile)
        if registerKey {
            try sandbox.model.registerTeam(teamID: teamID, keyID: keyID, publicKeyPEM: key.publicKey.spkiPEM, clientIDs: [clientID])
        }
        let tokenKey = SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined()
        return SIWAWorld(database: database, sandbox: sandbox, directory: directory, keyFile: keyFile,
                         tokenKeyHex: tokenKey, privateKey: key)
    }

    var keyring: TokenKeyring {
        get throws { TokenKeyring(current: try TokenCipher(keyID: "k1", encodedKey: tokenKeyHex)) }
    }

    /// Seeds accounts in the database and registers their tokens with the sandbox.
    mutating func seed(accounts: Int, revokedFraction: Double) async throws {
        let report = try await Seeder(pool: database.pool, keyring: try keyring).seed(
            accounts: accounts, revokedFraction: revokedFraction, teamID: Self.teamID, clientID: Self.clientID)
        sandbox.model.registerRefreshTokens(report.tokens.map {
            SandboxRefreshToken(token: $0.token, teamID: Self.teamID, clientID: Self.clientID, sub: $0.sub,
                                revoked: $0.state == "revoked")
        })
        seeded = report
    }

    /// Environment for `siwa-jobs` subprocesses.
    var environment: [String: String] {
        var env = database.environment
        env["SIWA_TEAM_ID"] = Self.teamID
        env["SIWA_KEY_ID"] = Self.keyID
        env["SIWA_CLIENT_ID"] = Self.clientID
        env["SIWA_KEY_FILE"] = keyFile
        env["SIWA_TOKEN_KEY"] = tokenKeyHex
        env["SIWA_APPLE_BASE_URL"] = sandbox.baseURL
        env["SIWA_CA_FILE"] = sandbox.caFile   // the sandbox's throwaway CA, trusted besides the system store
        env["SIWA_SANDBOX_MODE"] = "1"   // the sandbox signs notifications: verify with its keys
        env["SIWA_LOG_FORMAT"] = "json"
        return env
    }

    /// Runs the binary with `environment`, some variables changed (nil removes one).
    func run(_ arguments: [String], changing changes: [String: String?]) async throws -> (status: Int32, stdout: String, stderr: String) {
        var env = environment
        for (name, value) in changes { env[name] = value }
        return try await BinaryProcess.run(arguments, environment: env)
    }

    /// The sandbox's admin API, over HTTPS trusting its CA.
    var admin: SandboxAdminClient { SandboxAdminClient(baseURL: sandbox.baseURL, caFile: sandbox.caFile) }

    /// Plans the validation of the seeded accounts (default safety stop).
    /// - Throws: `TestFailure` when no account was due (no job is created then).
    func enqueue(safetyStop: SafetyStopRule = SafetyStopRule()) async throws -> EnqueuedJob {
        guard let job = try await Enqueuer(pool: database.pool, clock: SystemClock()).enqueueRefreshValidation(
            teamID: Self.teamID, clientID: Self.clientID, createdBy: "test", safetyStop: safetyStop) else {
            throw TestFailure("no account was due: no validation job was created")
        }
        return job
    }

    func tearDown() async {
        sandbox.stop()
        await database.drop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Items of `job` by state.
    func itemStates(job: Int64) async throws -> [String: Int] {
        let rows = try await database.pool.withConnection { conn in
            try await conn.query("SELECT state, count(*)::int AS n FROM siwa.job_items WHERE job_id = \(job) GROUP BY state")
        }
        var map: [String: Int] = [:]
        for row in rows { map[try row.decode("state")] = try row.decode("n") }
        return map
    }
}
