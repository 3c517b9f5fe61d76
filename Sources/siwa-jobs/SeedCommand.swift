import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs seed --accounts N [--revoked-fraction F] [--sandbox URL] [--prefix P]`: demo accounts
/// for SIWA_TEAM_ID / SIWA_CLIENT_ID, registered with the sandbox (team key and refresh tokens).
enum SeedCommand {
    static func run(_ words: [String], settings: Settings) async throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["accounts", "revoked-fraction", "sandbox", "prefix", "team-id", "client-id", "key-id", "key-file"])
        try args.noPositionals("seed")
        guard let count = try args.int("accounts", in: 1...10_000_000) else {
            throw UsageError(message: "seed: --accounts N is required")
        }
        let fraction = try args.fraction("revoked-fraction") ?? 0.03
        let credentials = try settings.credentials(arguments: args)
        let keyring = try settings.keyring()
        let sandbox = args.string("sandbox") ?? settings.value("SIWA_APPLE_BASE_URL")
        guard let sandbox else { throw UsageError(message: "seed: --sandbox URL (or SIWA_APPLE_BASE_URL) is required") }

        let pool = PostgresPool(configuration: settings.postgres, size: 1)
        let result = await Result(catching: {
            try await Seeder(pool: pool, keyring: keyring).seed(
                accounts: count, revokedFraction: fraction, teamID: credentials.teamID, clientID: credentials.clientID,
                prefix: args.string("prefix") ?? "user")
        })
        await pool.close()
        let report: SeedReport
        do { report = try result.get() } catch let error as DatabaseError where error.sqlState == "23505" {
            SIWAJobsCommand.fail("accounts with these ids already exist for this team and client: seed a fresh database or pass --prefix")
            return 1
        }
        let admin = SandboxAdminClient(baseURL: sandbox)
        try await admin.registerTeam(teamID: credentials.teamID, keyID: credentials.keyID,
                                     publicKeyPEM: credentials.privateKey.publicKey.spkiPEM, clientIDs: [credentials.clientID])
        try await admin.registerRefreshTokens(report.tokens, teamID: credentials.teamID, clientID: credentials.clientID)
        say("seeded \(report.accounts) accounts for team \(credentials.teamID) client \(credentials.clientID); "
            + "sandbox truth: \(report.valid) valid, \(report.revoked) revoked")
        return 0
    }
}
