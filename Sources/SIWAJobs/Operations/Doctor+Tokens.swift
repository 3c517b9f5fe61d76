import Postgres

extension Doctor {
    /// Stored refresh tokens per key id: the current key, each previous key (0 means it can be
    /// removed from `SIWA_TOKEN_KEYS_PREVIOUS`; `siwa-jobs tokens rekey` gets there), and any key
    /// id that is not configured at all (a failure: those tokens cannot be opened).
    func checkTokenKeys(_ connection: PostgresConnection, keyring: TokenKeyring, _ report: inout DoctorReport) async throws {
        let rows = try await connection.query("""
            SELECT refresh_token_key_id AS key_id, count(*)::int AS n FROM siwa.accounts
            WHERE refresh_token_ciphertext IS NOT NULL GROUP BY 1 ORDER BY 1
            """)
        var counts: [String: Int] = [:]
        for row in rows { counts[try row.decode("key_id")] = try row.decode("n") }
        let current = keyring.current.keyID
        var parts = ["\(current) (current): \(counts[current] ?? 0)"]
        for keyID in keyring.previousKeyIDs {
            let n = counts[keyID] ?? 0
            parts.append("\(keyID) (previous): \(n)" + (n == 0 ? ", can be removed" : ", run 'siwa-jobs tokens rekey'"))
        }
        let unknown = counts.keys.filter { !keyring.knows(keyID: $0) }.sorted()
        if unknown.isEmpty {
            report.ok("tokens per key id", parts.joined(separator: "; "))
        } else {
            report.fail("tokens per key id", parts.joined(separator: "; ") + "; "
                + unknown.map { "\($0) (not configured): \(counts[$0] ?? 0)" }.joined(separator: "; ")
                + ": add those keys to SIWA_TOKEN_KEYS_PREVIOUS")
        }
    }
}
