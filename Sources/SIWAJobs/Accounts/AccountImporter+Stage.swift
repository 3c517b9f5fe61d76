import Foundation
import Postgres
import SIWACrypto

extension AccountImporter {
    /// A stored account an import row matched by `external_user_id`.
    struct Known {
        let id: Int64
        let sub: String
        let fingerprint: String?
        let deleted: Bool
        let consentRevoked: Bool
    }

    /// What one batch did: rows refused against stored accounts, tokens sealed, and the staging
    /// rows as `COPY` CSV.
    struct Staged {
        var errors: [ImportRowError] = []
        var sealed = 0
        var copyData: [UInt8] = []
    }

    /// Matches a batch to stored accounts by `external_user_id` (when `lookup`: the client had
    /// accounts when the import started), gives new accounts ids from the table's sequence, seals
    /// new or changed tokens (AAD: the account id) and renders the staging rows. Without `seal`
    /// (the file is refused already: only its errors are still looked for) nothing is sealed and
    /// new rows get the placeholder id `-line`. Plaintext tokens never leave this function.
    /// Queries run on `side`, beside the transaction.
    /// - Throws: `CryptoError` when sealing fails; `DatabaseError`.
    func prepareBatch(_ rows: [ImportedAccount], target: Target, lookup: Bool, seal: Bool, sequence: String,
                      _ side: PostgresConnection) async throws -> Staged {
        var byExternal: [String: Known] = [:]
        if lookup { byExternal = try await knownAccounts(rows, target: target, side) }
        var staged = Staged()
        var accepted: [(row: ImportedAccount, known: Known?)] = []
        accepted.reserveCapacity(rows.count)
        for row in rows {
            let known = byExternal[row.externalUserID]
            if let error = refusal(row, known: known) {
                staged.errors.append(error)
            } else {
                accepted.append((row, known))
            }
        }
        guard !accepted.isEmpty else { return staged }
        var newIDs = try await allocateIDs(seal ? accepted.filter { $0.known == nil }.count : 0, sequence: sequence, side)
            .makeIterator()
        var out: [UInt8] = []
        out.reserveCapacity(accepted.count * 240)
        for (row, known) in accepted {
            guard let id = known?.id ?? (seal ? newIDs.next() : Int64(-row.line)) else {
                throw AccountImportError("the id sequence returned too few ids")
            }
            var sealed: (ciphertext: [UInt8], keyID: String, fingerprint: String)?
            if seal, let token = row.refreshToken {
                let fingerprint = keyring.fingerprint(token)
                if known?.fingerprint != fingerprint {
                    let result = try keyring.seal(token, accountAAD: String(id))
                    sealed = (result.ciphertext, result.keyID, fingerprint)
                    staged.sealed += 1
                }
            }
            Self.appendCopyLine(row, id: id, isNew: known == nil, sealed: sealed, to: &out)
        }
        staged.copyData = out
        return staged
    }

    /// Why a row cannot be applied to what is stored, or nil.
    private func refusal(_ row: ImportedAccount, known: Known?) -> ImportRowError? {
        func error(_ field: String, _ reason: String) -> ImportRowError {
            ImportRowError(line: row.line, field: field, reason: reason, externalUserID: row.externalUserID, sub: row.sub)
        }
        if let known {
            if known.sub != row.sub {
                return error("sub", "differs from the sub of account \(known.id) with this external_user_id (another Apple user); "
                    + "an import does not change an account's sub")
            }
            if known.deleted { return error("external_user_id", "account \(known.id) is deleted; an import does not bring it back") }
            if known.consentRevoked, let token = row.refreshToken, keyring.fingerprint(token) != known.fingerprint {
                return error("refresh_token", "the user revoked consent for account \(known.id); a new token comes from a new sign-in")
            }
        }
        return nil
    }

    private func knownAccounts(_ rows: [ImportedAccount], target: Target, _ tx: PostgresConnection) async throws -> [String: Known] {
        let result = try await tx.query("""
            SELECT id, external_user_id, sub, refresh_token_fingerprint, deleted_at IS NOT NULL AS deleted,
                   consent_revoked_at IS NOT NULL AS consent_revoked
            FROM siwa.accounts
            WHERE team_id = \(target.teamID) AND client_id = \(target.clientID) AND external_user_id = ANY(\(rows.map(\.externalUserID)))
            """)
        var map: [String: Known] = [:]
        for row in result {
            map[try row.decode("external_user_id")] = Known(
                id: try row.decode("id"), sub: try row.decode("sub"), fingerprint: try row.decode("refresh_token_fingerprint"),
                deleted: try row.decode("deleted"), consentRevoked: try row.decode("consent_revoked"))
        }
        return map
    }

    /// `count` new ids from `sequence` (the accounts' identity sequence), in one round trip.
    private func allocateIDs(_ count: Int, sequence: String, _ tx: PostgresConnection) async throws -> [Int64] {
        guard count > 0 else { return [] }
        let rows = try await tx.query("""
            SELECT array_agg(nextval(\(sequence)::regclass)) AS ids FROM generate_series(1, \(count))
            """)
        return try rows.first?.decode("ids", as: [Int64].self) ?? []
    }

    /// One staging row as COPY CSV: strings always quoted, absent values unquoted empty (NULL).
    static func appendCopyLine(_ row: ImportedAccount, id: Int64, isNew: Bool,
                               sealed: (ciphertext: [UInt8], keyID: String, fingerprint: String)?, to out: inout [UInt8]) {
        func text(_ value: String?) {
            if let value { CSVCopyStream.Iterator.appendQuoted(value, to: &out) }
            out.append(0x2C)
        }
        out += Array("\(row.line),\(id),\(isNew ? "t" : "f"),".utf8)
        text(row.externalUserID)
        text(row.sub)
        text(row.email)
        out += Array((row.isPrivateEmail.map { $0 ? "t" : "f" } ?? "").utf8)
        out.append(0x2C)
        text(row.tokenCheckedAt)
        out += Array((sealed == nil ? "f," : "t,").utf8)
        if let sealed {
            out += Array("\\x".utf8)
            appendHex(sealed.ciphertext, to: &out)
            out.append(0x2C)
            CSVCopyStream.Iterator.appendQuoted(sealed.keyID, to: &out)
            out.append(0x2C)
            CSVCopyStream.Iterator.appendQuoted(sealed.fingerprint, to: &out)
        } else {
            out += Array(",,".utf8)
        }
        out.append(0x0A)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Two lower-case hex digits per byte (bytea's hex input), written in place.
    static func appendHex(_ bytes: [UInt8], to out: inout [UInt8]) {
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
    }
}
