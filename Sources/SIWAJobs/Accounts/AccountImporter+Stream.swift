import Foundation
import Postgres

extension AccountImporter {
    static let copyStatement: SQL = """
        COPY account_import (line_no, id, is_new, external_user_id, sub, email, is_private_email, token_checked_at,
                             token_changed, ciphertext, key_id, fingerprint)
        FROM STDIN WITH (FORMAT csv)
        """

    /// Reads the file batch by batch into the staging table of `tx`. Each batch is matched and
    /// sealed (`prepareBatch`, its queries on a second connection of the pool) while the previous
    /// batch's `COPY` runs on `tx`, so this process's work overlaps the server's. Once a row is
    /// refused without `rejects`, no token is sealed any more (the file will be refused), but
    /// every row is still read, checked and staged so that all errors are reported.
    func stream(_ reader: inout AccountFileReader, into target: Target, errors: inout ImportErrors,
                report: inout AccountImportReport, _ tx: PostgresConnection) async throws {
        let known = try await tx.query("""
            SELECT EXISTS (SELECT 1 FROM siwa.accounts WHERE team_id = \(target.teamID) AND client_id = \(target.clientID)) AS any,
                   pg_get_serial_sequence('siwa.accounts', 'id') AS sequence
            """)
        let lookup = try known.first?.decode("any", as: Bool.self) ?? true
        let sequence = try known.first?.decode("sequence", as: String.self) ?? "siwa.accounts_id_seq"
        let keepsGoing = errors.rejects != nil
        try await pool.withConnection { side in
            // The COPY of the previous batch, awaited before the next one starts and before this
            // function returns or throws (the transaction's connection is never used twice at once).
            var inFlight: Task<Void, any Error>?
            do {
                while let batch = reader.next(size: batchSize) {
                    report.rows += batch.rows.count + batch.errors.filter { $0 != reader.fileError }.count
                    for error in batch.errors { try errors.add(error) }
                    guard !batch.rows.isEmpty else { continue }
                    let seal = errors.count == 0 || keepsGoing
                    let staged = try await prepareBatch(batch.rows, target: target, lookup: lookup, seal: seal, sequence: sequence, side)
                    for error in staged.errors { try errors.add(error) }
                    report.tokensSealed += staged.sealed
                    if let previous = inFlight { try await previous.value }
                    inFlight = nil
                    guard !staged.copyData.isEmpty else { continue }
                    let chunk = [staged.copyData]
                    inFlight = Task { _ = try await tx.copyFrom(Self.copyStatement, chunks: chunk) }
                }
                if let previous = inFlight { try await previous.value }
            } catch {
                if let previous = inFlight { _ = try? await previous.value }
                throw error
            }
        }
    }
}
