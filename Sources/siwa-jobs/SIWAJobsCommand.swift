import Foundation
import Postgres
import SIWAJobs

/// `siwa-jobs`: thin CLI. Parse into a value, validate, run, map errors to exit codes:
/// 0 ok; 1 finished with item failures; 64 usage; 65 refused data (changed migration);
/// 69 unavailable; 70 internal; 75 temporary failure (database unreachable); 78 configuration.
@main
struct SIWAJobsCommand {
    static let usage = """
        usage: siwa-jobs <command> [options]

        commands:
          migrate                         apply sql/ migrations (embedded in the binary)
          doctor                          check the configuration without calling Apple
          client-secret                   mint and print a client secret (--team-id --key-id --key-file --client-id)
          keygen --out FILE | --token-key generate a P-256 .p8 key (sandbox/demo) or a token encryption key
          seed --accounts N               create demo accounts and register them with the sandbox
          enqueue refresh-validation      plan the nightly refresh-token validation (--team-id --client-id)
          enqueue revocation-sweep        revoke tokens of deleted / consent-revoked accounts (--team-id --client-id)
          enqueue notifications           plan processing of stored notifications not yet planned (cron backup)
          enqueue noop --items N          plan a no-op job (queue benchmark)
          notifications serve --port N    receive Apple's server-to-server notifications (plain HTTP; TLS in front)
          notifications send --to URL     sandbox: sign a mix of notifications and POST them (--sandbox --client-id --sub)
          token verify TOKEN              verify an id_token or notification JWT (--jwks FILE|URL --client-id C [--at --nonce])
          work [--drain]                  run the worker (--concurrency N, --progress, --stats, ...)
          status [--job N]                job progress from the siwa.job_progress view
          job resume|cancel N             resume a paused job, or cancel a job
          transfer export|export-csv|import-csv|import|status|lookup|release
                                          app transfer between teams (README: Team transfer runbook)
          sandbox [flags]                 run the local stand-in for appleid.apple.com

        configuration comes from the environment: DATABASE_URL or PG*, SIWA_APPLE_BASE_URL,
        SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_CLIENT_ID, SIWA_KEY_FILE or SIWA_PRIVATE_KEY, SIWA_TEAMS_FILE,
        SIWA_TOKEN_KEY_FILE or SIWA_TOKEN_KEY, SIWA_TOKEN_KEY_ID, SIWA_NOTIFICATION_CLIENT_IDS,
        SIWA_LOG_LEVEL, SIWA_LOG_FORMAT.
        """

    static func main() async {
        // A closed stdout/stderr pipe (log collector gone) must not kill a worker mid-run: writes
        // fail instead, and the worker still stops gracefully and releases its leases.
        signal(SIGPIPE, SIG_IGN)
        let code = await run(Array(CommandLine.arguments.dropFirst()))
        exit(code)
    }

    static func run(_ words: [String]) async -> Int32 {
        guard let command = words.first else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 64
        }
        let rest = Array(words.dropFirst())
        let settings = Settings()
        if rest.contains("--help") || rest.contains("-h"), command != "sandbox" {
            print(usage)
            return 0
        }
        do {
            if !["doctor", "help", "--help", "-h", "sandbox", "keygen"].contains(command) { try settings.validateLogging() }
            guard settings.postgres.isParseable else {
                throw ConfigError(message: "DATABASE_URL is neither a postgres:// URI nor a key=value conninfo string")
            }
            switch command {
            case "migrate": return try await MigrateCommand.run(rest, settings: settings)
            case "doctor": return try await DoctorCommand.run(rest, settings: settings)
            case "client-secret": return try ClientSecretCommand.run(rest, settings: settings)
            case "keygen": return try KeygenCommand.run(rest)
            case "seed": return try await SeedCommand.run(rest, settings: settings)
            case "enqueue": return try await EnqueueCommand.run(rest, settings: settings)
            case "work": return try await WorkCommand.run(rest, settings: settings)
            case "status": return try await StatusCommand.run(rest, settings: settings)
            case "job": return try await JobCommand.run(rest, settings: settings)
            case "transfer": return try await TransferCommand.run(rest, settings: settings)
            case "sandbox": return await SandboxCommand.run(rest)
            case "notifications": return try await NotificationsCommand.run(rest, settings: settings)
            case "token": return try await TokenCommand.run(rest)
            case "help", "--help", "-h":
                print(usage)
                return 0
            default:
                throw UsageError(message: "unknown command '\(command)'")
            }
        } catch let error as UsageError {
            fail("\(error)\nrun 'siwa-jobs help' for usage")
            return 64
        } catch let error as ConfigError {
            fail("configuration error: \(error)")
            return 78
        } catch let error as MigrationError {
            fail("\(error)")
            return 65
        } catch let error as DatabaseError where error.isConnectionLoss {
            fail("database unreachable at \(settings.postgres.redactedDescription): \(error)")
            return 75
        } catch let error as DatabaseError where error.sqlState == "3D000" || error.sqlState == "28000" || error.sqlState == "28P01" {
            fail("database configuration error at \(settings.postgres.redactedDescription): \(error)")
            return 78
        } catch let error as DatabaseError where error.sqlState == "42P01" || error.sqlState == "3F000" {
            fail("the siwa schema is missing or incomplete: run 'siwa-jobs migrate' (\(error))")
            return 78
        } catch {
            fail("\(error)")
            return 70
        }
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("siwa-jobs: \(message)\n".utf8))
    }
}

/// Writes a line to stdout and flushes, so pipes and tests see it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
