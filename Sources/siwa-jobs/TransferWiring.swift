import AppleID
import Postgres
import Queue
import SIWAJobs

/// The transfer kinds for `work`: always registered (a job for a team this worker has no
/// credentials for is paused with a message naming `SIWA_TEAMS_FILE`), sharing one migration
/// token per team and client and one HTTP transport.
enum TransferWiring {
    static func handlers(settings: Settings, pool: PostgresPool) throws -> [any JobHandler] {
        let registry = try settings.appleRegistry(transport: CurlTransport())
        let tokens = MigrationTokens()
        return [
            TransferExportHandler(pool: pool, registry: registry, tokens: tokens),
            TransferImportHandler(pool: pool, registry: registry, tokens: tokens),
        ]
    }
}
