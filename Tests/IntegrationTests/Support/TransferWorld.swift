import Foundation
import TestSupport
import Postgres
import SIWACrypto
@testable import SIWAJobs
import Sandbox

/// Two teams for app-transfer tests: team A (sender) and team B (recipient), each with its own key
/// and `kid`, both registered with an in-process sandbox over real HTTP, configured for workers
/// through `SIWA_TEAMS_FILE`, and a fresh migrated database.
struct TransferWorld {
    static let teamA = "TEAMA12345"
    static let teamB = "TEAMB67890"
    static let keyA = "KEYA123456"
    static let keyB = "KEYB654321"
    static let clientID = "com.example.siwa"

    let database: TestDatabase
    let sandbox: SandboxServer
    let directory: URL
    let teamsFile: String

    /// What the sender's seeded users look like.
    struct SeededUser {
        let accountID: Int64
        let externalUserID: String
        let sub: String
        let email: String
        let privateEmail: Bool
        let revoked: Bool
    }

    static func create(latency: LatencyDistribution = .none, registerTeamB: Bool = true) async throws -> TransferWorld {
        let database = try await TestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = SandboxConfiguration(latency: latency, threads: 2, refreshIDToken: false)
        configuration.tls = SandboxTLS(directory: directory.path)   // HTTPS, trusted through SIWA_CA_FILE
        let sandbox = SandboxServer(configuration: configuration)
        _ = try sandbox.start()
        var entries: [String] = []
        for (team, kid, register) in [(teamA, keyA, true), (teamB, keyB, registerTeamB)] {
            let key = try P256PrivateKey.generate()
            let file = directory.appendingPathComponent("AuthKey_\(kid).p8").path
            try PrivateFile.write(key.pkcs8PEM, to: file)
            if register {
                try sandbox.model.registerTeam(teamID: team, keyID: kid, publicKeyPEM: key.publicKey.spkiPEM, clientIDs: [clientID])
            }
            entries.append("{\"team_id\":\"\(team)\",\"key_id\":\"\(kid)\",\"key_file\":\"AuthKey_\(kid).p8\",\"client_ids\":[\"\(clientID)\"]}")
        }
        let teamsFile = directory.appendingPathComponent("teams.json").path
        try Data("{\"teams\":[\(entries.joined(separator: ","))]}".utf8).write(to: URL(fileURLWithPath: teamsFile))
        return TransferWorld(database: database, sandbox: sandbox, directory: directory, teamsFile: teamsFile)
    }

    /// Environment for `siwa-jobs` subprocesses: both teams through `SIWA_TEAMS_FILE`, no single-team variables.
    var environment: [String: String] {
        var env = database.environment
        for name in ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_CLIENT_ID", "SIWA_KEY_FILE", "SIWA_PRIVATE_KEY"] { env.removeValue(forKey: name) }
        env["SIWA_TEAMS_FILE"] = teamsFile
        env["SIWA_APPLE_BASE_URL"] = sandbox.baseURL
        env["SIWA_CA_FILE"] = sandbox.caFile
        env["SIWA_SANDBOX_MODE"] = "1"   // the sandbox signs notifications: verify with its keys
        env["SIWA_LOG_FORMAT"] = "json"
        return env
    }

    var today: String { TransferWindow.format(Date()) }

    /// The sandbox's admin API, over HTTPS trusting its CA.
    var admin: SandboxAdminClient { SandboxAdminClient(baseURL: sandbox.baseURL, caFile: sandbox.caFile) }

    /// Creates `count` team A accounts (every `revokedEvery`-th user revoked in the sandbox, 3 in 5
    /// on a relay email) and registers them with the sandbox; records the app transfer A → B
    /// `daysAgo` days ago.
    func seedSender(count: Int, revokedEvery: Int = 33, daysAgo: Double = 1) async throws -> [SeededUser] {
        var users: [SeededUser] = []
        var csv = ""
        for i in 1...count {
            let privateEmail = i % 5 < 3
            let external = "user-" + String(format: "%06d", i)
            let sub = String(format: "%06d", i) + ".\(Digest.sha256Hex("sub\(i)\(UUID())").prefix(32)).0001"
            let email = privateEmail ? "a\(i)x@privaterelay.appleid.com" : "person.\(i)@example.com"
            users.append(SeededUser(accountID: Int64(i), externalUserID: external, sub: sub, email: email,
                                    privateEmail: privateEmail, revoked: i % revokedEvery == 0))
            csv += "\(i),\(external),\(Self.teamA),\(Self.clientID),\(sub),\(email),\(privateEmail ? "t" : "f")\n"
        }
        let chunk = [Array(csv.utf8)]
        _ = try await database.pool.withConnection { conn in
            try await conn.copyFrom("""
                COPY siwa.accounts (id, external_user_id, team_id, client_id, sub, email, is_private_email) FROM STDIN WITH (FORMAT csv)
                """, chunks: chunk)
        }
        try await database.pool.execute("SELECT setval(pg_get_serial_sequence('siwa.accounts', 'id'), \(count))")
        sandbox.model.registerMigrationUsers(users.map {
            SandboxMigrationUser(teamID: Self.teamA, clientID: Self.clientID, sub: $0.sub, privateEmail: $0.privateEmail, revoked: $0.revoked)
        })
        sandbox.model.recordAppTransfer(clientID: Self.clientID, fromTeamID: Self.teamA, toTeamID: Self.teamB,
                                        at: Date().timeIntervalSince1970 - daysAgo * 86_400)
        return users
    }

    func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await BinaryProcess.run(arguments, environment: environment)
    }

    /// The job id printed by `transfer export` / `transfer import`.
    static func jobID(_ stdout: String) -> Int64? {
        guard let range = stdout.range(of: "enqueued job ") else { return nil }
        return Int64(stdout[range.upperBound...].prefix { $0.isNumber })
    }

    /// `transfer status --job` with the days left of `transferDate`'s window by our clock just
    /// before and just after it: the two differ only when a UTC midnight passed in between, and
    /// the output names one of them.
    func statusAndDaysLeft(job: Int64, transferDate: String) async throws -> (stdout: String, daysLeft: [Int]) {
        let window = try TransferWindow(day: transferDate)
        let before = window.daysLeft(now: Date())
        let status = try await run(["transfer", "status", "--job", "\(job)"])
        return (status.stdout, [before, window.daysLeft(now: Date())])
    }

    func migrationCalls() -> Int { sandbox.model.stats().requests["/auth/usermigrationinfo"] ?? 0 }

    func tearDown() async {
        sandbox.stop()
        await database.drop()
        try? FileManager.default.removeItem(at: directory)
    }
}
