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

    /// What one batch did: rows refused against stored accounts, tokens sealed.
    struct Staged {
        var errors: [ImportRowError] = []
        var sealed = 0
    }

    /// Matches a batch to stored accounts, gives new accounts ids from the table's sequence, seals
    /// new or changed tokens (AAD: the account id) and, when `copy`, sends the good rows to the
    /// staging table with one `COPY`. Plaintext tokens never leave this function.
    /// - Throws: `CryptoError` when sealing fails; `DatabaseError`.
    func stageBatch(_ rows: [ImportedAccount], target: Target, copy: Bool, _ tx: PostgresConnection) async throws -> Staged {
        let byExternal = try await knownAccounts(rows, target: target, tx)
        let subOwners = try await subOwners(rows, target: target, tx)
        var staged = Staged()
        var accepted: [(row: ImportedAccount, known: Known?)] = []
        accepted.reserveCapacity(rows.count)
        for row in rows {
            let known = byExternal[row.externalUserID]
            if let error = refusal(row, known: known, owner: subOwners[row.sub]) {
                staged.errors.append(error)
            } else {
                accepted.append((row, known))
            }
        }
        guard copy, !accepted.isEmpty else { return staged }
        var newIDs = try await allocateIDs(accepted.filter { $0.known == nil }.count, tx).makeIterator()
        var out: [UInt8] = []
        out.reserveCapacity(accepted.count * 220)
        for (row, known) in accepted {
            guard let id = known?.id ?? newIDs.next() else { throw AccountImportError("the id sequence returned too few ids") }
            var sealed: (ciphertext: [UInt8], keyID: String, fingerprint: String)?
            if let token = row.refreshToken {
                let fingerprint = Fingerprint.of(token)
                if known?.fingerprint != fingerprint {
                    let result = try keyring.seal(token, accountAAD: String(id))
                    sealed = (result.ciphertext, result.keyID, fingerprint)
                    staged.sealed += 1
                }
            }
            Self.appendCopyLine(row, id: id, isNew: known == nil, sealed: sealed, to: &out)
        }
        let chunk = [out]
        _ = try await tx.copyFrom("""
            COPY account_import (line_no, id, is_new, external_user_id, sub, email, is_private_email, token_checked_at,
                                 token_changed, ciphertext, key_id, fingerprint)
            FROM STDIN WITH (FORMAT csv)
            """, chunks: chunk)
        return staged
    }

    /// Why a row cannot be applied to what is stored, or nil.
    private func refusal(_ row: ImportedAccount, known: Known?, owner: (id: Int64, clientID: String, externalUserID: String)?) -> ImportRowError? {
        func error(_ field: String, _ reason: String) -> ImportRowError {
            ImportRowError(line: row.line, field: field, reason: reason, externalUserID: row.externalUserID, sub: row.sub)
        }
        if let known {
            if known.sub != row.sub {
                return error("sub", "differs from the sub of account \(known.id) with this external_user_id (another Apple user); "
                    + "an import does not change an account's sub")
            }
            if known.deleted { return error("external_user_id", "account \(known.id) is deleted; an import does not bring it back") }
            if known.consentRevoked, let token = row.refreshToken, Fingerprint.of(token) != known.fingerprint {
                return error("refresh_token", "the user revoked consent for account \(known.id); a new token comes from a new sign-in")
            }
        }
        if let owner, owner.id != known?.id {
            return error("sub", "already belongs to account \(owner.id) of this team (client \(owner.clientID), "
                + "external_user_id '\(owner.externalUserID)')")
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

    private func subOwners(_ rows: [ImportedAccount], target: Target,
                           _ tx: PostgresConnection) async throws -> [String: (id: Int64, clientID: String, externalUserID: String)] {
        let result = try await tx.query("""
            SELECT id, sub, client_id, external_user_id FROM siwa.accounts
            WHERE team_id = \(target.teamID) AND sub = ANY(\(rows.map(\.sub)))
            """)
        var map: [String: (id: Int64, clientID: String, externalUserID: String)] = [:]
        for row in result {
            map[try row.decode("sub")] = (try row.decode("id"), try row.decode("client_id"), try row.decode("external_user_id"))
        }
        return map
    }

    private func allocateIDs(_ count: Int, _ tx: PostgresConnection) async throws -> [Int64] {
        guard count > 0 else { return [] }
        let rows = try await tx.query("""
            SELECT nextval(pg_get_serial_sequence('siwa.accounts', 'id')) AS id FROM generate_series(1, \(count))
            """)
        return try rows.map { try $0.decode("id") }
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
            out += Array(Hex.encode(sealed.ciphertext).utf8)
            out.append(0x2C)
            CSVCopyStream.Iterator.appendQuoted(sealed.keyID, to: &out)
            out.append(0x2C)
            CSVCopyStream.Iterator.appendQuoted(sealed.fingerprint, to: &out)
        } else {
            out += Array(",,".utf8)
        }
        out.append(0x0A)
    }
}
