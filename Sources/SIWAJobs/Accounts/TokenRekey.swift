import Foundation
import Postgres
import SIWACore
import SIWACrypto

/// What `siwa-jobs tokens rekey` did, and its progress while it runs.
public struct TokenRekeyReport: Sendable, Encodable {
    /// Tokens under another key id than the current one when the run started.
    public var toRekey = 0
    /// Tokens now sealed under the current key by this run.
    public var rekeyed = 0
    /// Tokens that changed while being re-sealed (a concurrent writer: a sign-in, a sweep); left
    /// as that writer stored them, and looked at again in a later pass.
    public var changedMeanwhile = 0
    /// Tokens whose rows a concurrent writer held locked (a validation's completion) when their
    /// batch was written: skipped rather than waited for, so the run is never part of a deadlock,
    /// and looked at again in a later pass.
    public var busy = 0
    /// Tokens that did not decrypt (tampered or corrupt), with their account ids (first 20).
    public var unreadable = 0
    public var unreadableAccounts: [Int64] = []
    /// Tokens still under another key id than the current one when the run ended.
    public var remaining = 0
    public var currentKeyID = ""

    enum CodingKeys: String, CodingKey {
        case toRekey = "to_rekey", rekeyed, changedMeanwhile = "changed_meanwhile", busy, unreadable,
             unreadableAccounts = "unreadable_accounts", remaining, currentKeyID = "current_key_id"
    }
}

/// Re-seals every stored refresh token under the current key (`TokenKeyring.current`), so
/// previous keys can be removed from `SIWA_TOKEN_KEYS_PREVIOUS`, and rewrites its fingerprint as
/// the keyed one (`TokenKeyring.fingerprint`): the migration path of fingerprints stored with
/// plain SHA-256 (`sha256:…`) before keyed fingerprints, which it also picks under the current key.
///
/// - **Batches**: `batchSize` accounts at a time in id order, each batch one read and one update
///   statement (its own transaction), so locks are held for one batch only. The update locks its
///   rows in id order with `SKIP LOCKED`: a row a worker's completion statement holds is left for
///   a later pass (`busy`) instead of waited for, so a rekey never deadlocks with a running
///   validation (whose multi-row update locks in its plan's order).
/// - **Resumable**: it picks what is not under the current key (or not keyed-fingerprinted), so a run that was stopped simply
///   continues where it was when started again; nothing else is recorded.
/// - **Safe beside a running worker**: the update is a compare-and-swap on the ciphertext it read
///   (`WHERE refresh_token_ciphertext = <what was read>`): a token written meanwhile (a sign-in's
///   new token, a sweep's wipe) is never overwritten with the old one re-sealed. Workers must know
///   both keys while it runs (current plus `SIWA_TOKEN_KEYS_PREVIOUS`); a validation may read a
///   token under either. Tokens skipped that way are looked at again (up to `maxPasses` passes).
/// - A key id the keyring does not know stops the run before anything changes
///   (`ConfigurationError`); a token that does not decrypt is counted, named, and left alone.
public struct TokenRekey: Sendable {
    let pool: PostgresPool
    let keyring: TokenKeyring
    let batchSize: Int
    let maxPasses = 8
    /// Test seam: runs after a batch is read and re-sealed, before it is written.
    var beforeWrite: @Sendable ([Int64]) async throws -> Void = { _ in }

    public init(pool: PostgresPool, keyring: TokenKeyring, batchSize: Int = 1_000) {
        self.pool = pool
        self.keyring = keyring
        self.batchSize = batchSize
    }

    /// - Parameter progress: called after each batch with the counts so far.
    /// - Throws: `ConfigurationError` naming key ids that are stored but not configured;
    ///   `DatabaseError`.
    public func run(progress: (TokenRekeyReport) -> Void = { _ in }) async throws -> TokenRekeyReport {
        let current = keyring.current.keyID
        var report = TokenRekeyReport(currentKeyID: current)
        let counts = try await pool.query("""
            SELECT refresh_token_key_id AS key_id, count(*)::int AS n FROM siwa.accounts
            WHERE refresh_token_ciphertext IS NOT NULL AND (refresh_token_key_id <> \(current) OR NOT starts_with(coalesce(refresh_token_fingerprint, ''), 'hmac:'))
            GROUP BY 1 ORDER BY 1
            """)
        var unknown: [String] = []
        for row in counts {
            let keyID: String = try row.decode("key_id")
            report.toRekey += try row.decode("n", as: Int.self)
            if !keyring.knows(keyID: keyID) { unknown.append(keyID) }
        }
        if !unknown.isEmpty {
            throw ConfigurationError("stored tokens are sealed under key id \(unknown.map { "'\($0)'" }.joined(separator: ", ")), "
                + "which is not configured: add it to SIWA_TOKEN_KEYS_PREVIOUS (id:key) and run again; nothing was changed")
        }
        var unreadable = Set<Int64>()
        for _ in 0..<maxPasses {
            let before = (report.changedMeanwhile, report.busy)
            try await pass(&report, unreadable: &unreadable, progress: progress)
            if (report.changedMeanwhile, report.busy) == before { break }
            // Rows were busy: give the writer holding them a moment before the next pass.
            if report.busy > before.1 { try await Task.sleep(for: .milliseconds(200)) }
        }
        let left = try await pool.query("""
            SELECT count(*)::int AS n FROM siwa.accounts
            WHERE refresh_token_ciphertext IS NOT NULL AND (refresh_token_key_id <> \(current) OR NOT starts_with(coalesce(refresh_token_fingerprint, ''), 'hmac:'))
            """)
        report.remaining = try left.first?.decode("n") ?? 0
        return report
    }

    /// One walk over the accounts by id.
    private func pass(_ report: inout TokenRekeyReport, unreadable: inout Set<Int64>,
                      progress: (TokenRekeyReport) -> Void) async throws {
        let current = keyring.current.keyID
        var last: Int64 = 0
        while true {
            let rows = try await pool.query("""
                SELECT id, refresh_token_ciphertext, refresh_token_key_id FROM siwa.accounts
                WHERE id > \(last) AND refresh_token_ciphertext IS NOT NULL AND (refresh_token_key_id <> \(current) OR NOT starts_with(coalesce(refresh_token_fingerprint, ''), 'hmac:'))
                ORDER BY id LIMIT \(batchSize)
                """)
            guard let lastRow = rows.last else { return }
            last = try lastRow.decode("id")
            var ids: [Int64] = [], old: [String] = [], new: [String] = [], fingerprints: [String] = []
            for row in rows {
                let id: Int64 = try row.decode("id")
                if unreadable.contains(id) { continue }
                let sealed: [UInt8] = try row.decode("refresh_token_ciphertext")
                do {
                    let token = try keyring.open(sealed, keyID: try row.decode("refresh_token_key_id"), accountAAD: String(id))
                    ids.append(id)
                    old.append(Hex.encode(sealed))
                    new.append(Hex.encode(try keyring.seal(token, accountAAD: String(id)).ciphertext))
                    fingerprints.append(keyring.fingerprint(token))
                } catch let error as ConfigurationError {
                    throw error
                } catch {
                    unreadable.insert(id)
                    report.unreadable += 1
                    if report.unreadableAccounts.count < 20 { report.unreadableAccounts.append(id) }
                }
            }
            guard !ids.isEmpty else { continue }
            try await beforeWrite(ids)
            let counts = try await pool.query("""
                WITH u AS (SELECT * FROM unnest(\(ids)::bigint[], \(old)::text[], \(new)::text[], \(fingerprints)::text[]) AS u (id, old, new, fp)),
                free AS (SELECT a.id, a.refresh_token_ciphertext = decode(u.old, 'hex') AS same
                         FROM siwa.accounts a JOIN u ON u.id = a.id ORDER BY a.id FOR UPDATE OF a SKIP LOCKED),
                written AS (UPDATE siwa.accounts a SET refresh_token_ciphertext = decode(u.new, 'hex'), refresh_token_key_id = \(current),
                                   refresh_token_fingerprint = u.fp
                            FROM u JOIN free f ON f.id = u.id AND f.same
                            WHERE a.id = u.id AND a.refresh_token_ciphertext = decode(u.old, 'hex')
                            RETURNING a.id)
                SELECT (SELECT count(*)::int FROM written) AS written, (SELECT count(*)::int FROM free) AS free
                """)
            let written: Int = try counts.first?.decode("written") ?? 0
            let free: Int = try counts.first?.decode("free") ?? ids.count
            report.rekeyed += written
            report.changedMeanwhile += free - written
            report.busy += ids.count - free
            progress(report)
        }
    }
}
