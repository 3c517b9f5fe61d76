import Foundation
import Postgres

extension Doctor {
    /// Database reachability, writability (a hot standby or read-only transactions fail, as the
    /// worker would stop on them), clock skew (more than 30 s fails: client secrets carry
    /// iat/exp), migrations (pending, changed, or newer than this binary), one stored token
    /// opened with the configured keys, and stored tokens per key id. A database failure that may pass (unreachable, read-only)
    /// counts as `databaseUnreachable` (exit 75); one of the settings or the schema as a problem.
    func checkDatabase(_ report: inout DoctorReport) async throws {
        let where_ = configuration.postgres.redactedDescription
        do {
            let connection = try await PostgresConnection.connect(configuration.postgres)
            defer { connection.close() }
            report.ok("database", where_)
            if let weakness = try await connection.security().weakness { report.warn("database TLS", weakness) }
            if let reason = try await connection.readOnlyReason() {
                report.databaseDown("read-only: \(reason); the worker and the receiver need the primary (point the "
                    + "settings at it, or retry after the failover)", check: "database writes")
            }
            let rows = try await connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
            let dbNow: Double = try rows.first?.decode("now") ?? 0
            let skew = clock.now.timeIntervalSince1970 - dbNow
            if abs(skew) > 30 {
                report.fail("clock", String(format: "local clock differs from the database by %.1f s; client secrets use iat/exp, fix NTP", skew))
            } else {
                report.ok("clock", String(format: "skew against the database %.3f s", skew))
            }
            let migrations = try await Migrator().status(on: connection)
            if migrations.pending.isEmpty && migrations.changed.isEmpty && migrations.unknown.isEmpty {
                report.ok("migrations", "all applied")
            }
            if !migrations.unknown.isEmpty {
                report.fail("migrations", SchemaPreflight.newerSchemaMessage(migrations.unknown))
            }
            if !migrations.pending.isEmpty {
                report.fail("migrations", "not applied: \(migrations.pending.joined(separator: ", ")) (run 'siwa-jobs migrate')")
            }
            if !migrations.changed.isEmpty {
                report.fail("migrations", "applied with different text than this binary's: \(migrations.changed.joined(separator: ", "))")
            }
            if migrations.pending.isEmpty, let ring = try? configuration.keyring() {
                try await checkStoredToken(connection, keyring: ring, &report)
                try await checkTokenKeys(connection, keyring: ring, &report)
            }
            if migrations.pending.isEmpty { try await checkWorkerVersions(connection, &report) }
        } catch let error as DatabaseError {
            switch error.meaning {
            case .transient, .readOnly: report.databaseDown("\(where_): \(error)")
            case .schemaMissing: report.fail("database", "the siwa schema is missing or incomplete: run 'siwa-jobs migrate' (\(error))")
            case .misconfigured, .permission, .badData, .unexpected: report.fail("database", "\(where_): \(error)")
            }
        }
    }

    /// Opens the newest stored refresh token (if any) with the configured keys: a wrong token key
    /// is caught here rather than by a failed night.
    private func checkStoredToken(_ connection: PostgresConnection, keyring: TokenKeyring,
                                  _ report: inout DoctorReport) async throws {
        let rows = try await connection.query("""
            SELECT id, refresh_token_ciphertext, refresh_token_key_id FROM siwa.accounts
            WHERE refresh_token_ciphertext IS NOT NULL ORDER BY id DESC LIMIT 1
            """)
        guard let row = rows.first else {
            report.ok("stored tokens", "none yet")
            return
        }
        let id: Int64 = try row.decode("id")
        let keyID: String = try row.decode("refresh_token_key_id")
        do {
            _ = try keyring.open(try row.decode("refresh_token_ciphertext"), keyID: keyID, accountAAD: String(id))
            report.ok("stored tokens", "a sample (account \(id), key id \(keyID)) decrypts with the configured keys")
        } catch {
            report.fail("stored tokens", "account \(id) (key id \(keyID)) does not decrypt with the configured keys: \(error)")
        }
    }
}
