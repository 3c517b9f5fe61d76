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

        // The sandbox first: an unreachable sandbox must not leave accounts it does not know.
        let admin = SandboxAdminClient(baseURL: sandbox)
        try await admin.registerTeam(teamID: credentials.teamID, keyID: credentials.keyID,
                                     publicKeyPEM: credentials.privateKey.publicKey.spkiPEM, clientIDs: [credentials.clientID])
        let pool = PostgresPool(configuration: settings.postgres, size: 1)
        let result = await Result(catching: {
            try await Seeder(pool: pool, keyring: keyring).seed(
                accounts: count, revokedFraction: fraction, teamID: credentials.teamID, clientID: credentials.clientID,
                prefix: args.string("prefix") ?? "user")
        })
        let report: SeedReport
        do { report = try result.get() } catch let error as DatabaseError where error.sqlState == "23505" {
            await pool.close()
            SIWAJobsCommand.fail("accounts with these ids already exist for this team and client: seed a fresh database or pass --prefix")
            return 1
        } catch {
            await pool.close()
            throw error
        }
        do {
            try await admin.registerRefreshTokens(report.tokens, teamID: credentials.teamID, clientID: credentials.clientID)
        } catch {
            // Undo: accounts whose tokens the sandbox does not know would skew its truth.
            _ = try? await pool.withConnection { conn in
                try await conn.execute("DELETE FROM siwa.accounts WHERE id = ANY(\(report.accountIDs))")
            }
            await pool.close()
            throw error
        }
        await pool.close()
        say("seeded \(report.accounts) accounts for team \(credentials.teamID) client \(credentials.clientID); "
            + "sandbox truth: \(report.valid) valid, \(report.revoked) revoked")
        return 0
    }
}
