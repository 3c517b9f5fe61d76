import Foundation
import Postgres
import SIWACrypto

/// What `seed` created.
public struct SeedReport: Sendable {
    public let accounts: Int
    /// Ids of the accounts created.
    public let accountIDs: [Int64]
    /// Every seeded refresh token with the state the sandbox should give it.
    public let tokens: [SandboxAdminClient.SeededToken]
    public var revoked: Int { tokens.filter { $0.state == "revoked" }.count }
    public var valid: Int { tokens.count - revoked }
}

/// Creates realistic demo accounts for one team and client: team-scoped subs, a mix of private
/// relay and real emails, and refresh tokens encrypted at rest (AES-256-GCM, bound to the account
/// id). A fraction of tokens is marked revoked for the sandbox. Rows are loaded with COPY.
public struct Seeder: Sendable {
    let pool: PostgresPool
    let keyring: TokenKeyring

    public init(pool: PostgresPool, keyring: TokenKeyring) {
        self.pool = pool
        self.keyring = keyring
    }

    /// - Parameters:
    ///   - revokedFraction: share of tokens the sandbox will consider revoked, 0...1.
    ///   - prefix: prefix of `external_user_id` values (`prefix-000001`).
    public func seed(accounts count: Int, revokedFraction: Double, teamID: String, clientID: String,
                     prefix: String = "user") async throws -> SeedReport {
        let revokedCount = Int((Double(count) * revokedFraction).rounded())
        var revokedIndexes = Set<Int>()
        while revokedIndexes.count < revokedCount { revokedIndexes.insert(Int.random(in: 0..<count)) }

        let ids: [Int64] = try await pool.withConnection { conn in
            let rows = try await conn.query("""
                SELECT nextval(pg_get_serial_sequence('siwa.accounts', 'id')) AS id FROM generate_series(1, \(count))
                """)
            return try rows.map { try $0.decode("id") }
        }
        var tokens: [SandboxAdminClient.SeededToken] = []
        tokens.reserveCapacity(count)
        var chunks: [[UInt8]] = []
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 20)
        for (index, id) in ids.enumerated() {
            let sub = Self.makeSub()
            let token = Self.makeRefreshToken()
            let sealed = try keyring.seal(token, accountAAD: String(id))
            let isPrivate = index % 5 < 3
            let email = isPrivate ? "\(Self.hex(5)).relay@privaterelay.appleid.com" : "\(prefix).\(index + 1)@example.com"
            let external = "\(prefix)-\(String(index + 1).leftPadded(to: 6))"
            let fields = [
                String(id), external, teamID, clientID, sub, email, isPrivate ? "t" : "f",
                "\\x" + Hex.encode(sealed.ciphertext), sealed.keyID, keyring.fingerprint(token),
            ]
            chunk.append(contentsOf: Array((fields.map(Self.csvField).joined(separator: ",") + "\n").utf8))
            if chunk.count >= 1 << 20 {
                chunks.append(chunk)
                chunk.removeAll(keepingCapacity: true)
            }
            tokens.append(.init(token: token, sub: sub, state: revokedIndexes.contains(index) ? "revoked" : "valid"))
        }
        if !chunk.isEmpty { chunks.append(chunk) }
        let toCopy = chunks
        let copied = try await pool.withConnection { conn in
            try await conn.copyFrom("""
                COPY siwa.accounts (id, external_user_id, team_id, client_id, sub, email, is_private_email,
                                    refresh_token_ciphertext, refresh_token_key_id, refresh_token_fingerprint)
                FROM STDIN WITH (FORMAT csv)
                """, chunks: toCopy)
        }
        if copied >= Self.vacuumAfter {
            // As after any bulk load: planner statistics, hint bits and the visibility map now,
            // not from autovacuum in the middle of the first job over these rows.
            _ = try? await pool.execute("VACUUM (ANALYZE) siwa.accounts")
        }
        return SeedReport(accounts: copied, accountIDs: ids, tokens: tokens)
    }

    /// Seeds of at least this many accounts vacuum and analyze the table after loading.
    static let vacuumAfter = 10_000

    static func makeSub() -> String {
        "000\(Int.random(in: 100...999)).\(hex(16)).\(Int.random(in: 1000...9999))"
    }

    /// Shaped like Apple's: `r` + hex, a dot-separated tail with base64url characters.
    static func makeRefreshToken() -> String {
        "r\(hex(16)).0.mrq\(Int.random(in: 0...9)).\(Base64URL.encode(SecureRandom.bytes(24)))"
    }

    static func hex(_ bytes: Int) -> String { Hex.encode(SecureRandom.bytes(bytes)) }

    static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
