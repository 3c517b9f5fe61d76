import Commands
import Postgres
import SIWAJobs

/// `siwa-jobs seed --accounts N`: demo accounts for the single team, registered with the sandbox
/// (team key and refresh tokens), so that `status --sandbox` can compare against its truth.
enum SeedCommand: Command {
    static let accounts = Declare.option("accounts", "N", .integer(in: 1...10_000_000), help: "how many accounts", required: true)
    static let revokedFraction = Declare.value("revoked-fraction", "F", .fraction, default: 0.03,
                                               help: "share of tokens the sandbox treats as revoked")
    static let sandbox = Declare.option("sandbox", "URL", CommonOptions.sandboxURL, help: "the sandbox's base URL (required unless set in the environment)",
                                        environment: ["SIWA_APPLE_BASE_URL"])
    static let prefix = Declare.value("prefix", "P", .string, default: "user", help: "prefix of the accounts' external_user_id")

    static let spec = CommandSpec(
        "seed", abstract: "create demo accounts and register them with the sandbox",
        options: [accounts, revokedFraction, sandbox, prefix, CommonOptions.teamID, CommonOptions.clientID, CommonOptions.keyID,
                  CommonOptions.keyFile],
        environment: [EnvironmentDocs.database, EnvironmentDocs.appleBaseURL, EnvironmentDocs.caFile] + EnvironmentDocs.singleTeam
            + EnvironmentDocs.tokenKey + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let settings = context.configuration
        let count = try arguments.required(accounts)
        // From the environment, the URL is checked as `work` checks it (78 naming the variable).
        guard let url = try arguments[sandbox]
                ?? (settings.value("SIWA_APPLE_BASE_URL") != nil ? settings.validatedAppleBaseURL() : nil) else {
            throw arguments.usageError("seed: --sandbox URL (or SIWA_APPLE_BASE_URL) is required")
        }
        let credentials = try settings.credentials(flags: CredentialFlags(
            teamID: arguments[CommonOptions.teamID], keyID: arguments[CommonOptions.keyID],
            clientID: arguments[CommonOptions.clientID], keyFile: arguments[CommonOptions.keyFile]))
        let keyring = try settings.keyring()
        let admin = SandboxAdminClient(baseURL: url, transport: try settings.httpTransport(maxConnectionsPerHost: 4))
        let pool = PostgresPool(configuration: settings.postgres, size: 1)
        let seeded = await Result(catching: {
            try await DemoSeeding(pool: pool, keyring: keyring, admin: admin).run(
                accounts: count, revokedFraction: arguments[revokedFraction], credentials: credentials, prefix: arguments[prefix])
        })
        await pool.close()
        let report = try seeded.get()
        say("seeded \(report.accounts) accounts for team \(credentials.teamID) client \(credentials.clientID); "
            + "sandbox truth: \(report.valid) valid, \(report.revoked) revoked")
        return .success
    }
}
