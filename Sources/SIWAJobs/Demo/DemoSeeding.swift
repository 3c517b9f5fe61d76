import AppleID
import Postgres

/// Accounts that `seed` would create already exist (same external ids for the team and client).
public struct SeedConflictError: Error, CustomStringConvertible, Sendable {
    public var description: String {
        "accounts with these ids already exist for this team and client: seed a fresh database or pass --prefix"
    }
}

/// `siwa-jobs seed`: demo accounts registered with the sandbox, so that the sandbox's truth and
/// the database agree: the team's key first, then the accounts (`Seeder`), then their refresh
/// tokens, as users who signed in now (the sandbox signs their id_tokens then, not on the refresh
/// path); accounts whose tokens the sandbox refused are deleted again.
public struct DemoSeeding: Sendable {
    let pool: PostgresPool
    let keyring: TokenKeyring
    let admin: SandboxAdminClient

    public init(pool: PostgresPool, keyring: TokenKeyring, admin: SandboxAdminClient) {
        self.pool = pool
        self.keyring = keyring
        self.admin = admin
    }

    /// - Parameters:
    ///   - revokedFraction: share of tokens the sandbox will consider revoked, 0...1.
    ///   - prefix: prefix of `external_user_id` values.
    /// - Throws: `SeedConflictError` when such accounts exist; `SandboxAdminClientError` or a
    ///   transport error when the sandbox refuses or cannot be reached (nothing is left behind);
    ///   `DatabaseError`.
    public func run(accounts count: Int, revokedFraction: Double, credentials: AppleCredentials,
                    prefix: String) async throws -> SeedReport {
        // The sandbox first: an unreachable sandbox must not leave accounts it does not know.
        try await admin.registerTeam(teamID: credentials.teamID, keyID: credentials.keyID,
                                     publicKeyPEM: credentials.privateKey.publicKey.spkiPEM, clientIDs: [credentials.clientID])
        let report: SeedReport
        do {
            report = try await Seeder(pool: pool, keyring: keyring).seed(
                accounts: count, revokedFraction: revokedFraction, teamID: credentials.teamID,
                clientID: credentials.clientID, prefix: prefix)
        } catch let error as DatabaseError where error.isUniqueViolation {
            throw SeedConflictError()
        }
        do {
            try await admin.registerRefreshTokens(report.tokens, teamID: credentials.teamID, clientID: credentials.clientID,
                                                  signedIn: true)
        } catch {
            // Undo: accounts whose tokens the sandbox does not know would skew its truth.
            _ = try? await pool.execute("DELETE FROM siwa.accounts WHERE id = ANY(\(report.accountIDs))")
            throw error
        }
        return report
    }
}
