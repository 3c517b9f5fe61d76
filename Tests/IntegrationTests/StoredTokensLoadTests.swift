import Postgres
import Testing
@testable import SIWAJobs

/// Issue #12: a batch's stored tokens are read by one scan of the key over the batch's span when
/// its ids lie close together, and by one lookup per id when they are scattered. Both forms must
/// return exactly the asked-for accounts that exist: none between them, none missing.
@Suite(.serialized) struct StoredTokensLoadTests {
    @Test func aSpanIsDenseOnlyWhenItHoldsAtMostTwiceTheIDs() {
        #expect(StoredTokens.denseSpan([]) == nil)
        #expect(StoredTokens.denseSpan([7]) == 7...7)
        #expect(StoredTokens.denseSpan([12, 10, 11]) == 10...12)
        #expect(StoredTokens.denseSpan([1, 2, 3, 6]) == 1...6, "six ids wide, four asked: within twice")
        #expect(StoredTokens.denseSpan([1, 9]) == nil, "nine wide for two ids")
        #expect(StoredTokens.denseSpan([Int64.min, Int64.max]) == nil, "a width that overflows is not dense")
    }

    @Test func bothFormsReturnExactlyTheAccountsAskedFor() async throws {
        let db = try await TestDatabase.create()
        // 40 accounts with distinct ciphertexts; every fifth has none (a token-less account).
        _ = try await db.pool.execute("""
            INSERT INTO siwa.accounts (external_user_id, team_id, client_id, sub, refresh_token_ciphertext,
                                       refresh_token_key_id, refresh_token_fingerprint)
            SELECT 'user-' || g, 'TEAMA12345', 'com.example.siwa', 'sub-' || g,
                   CASE WHEN g % 5 = 0 THEN NULL ELSE decode(lpad(to_hex(g), 8, '0'), 'hex') END,
                   CASE WHEN g % 5 = 0 THEN NULL ELSE 'k1' END, 'fp-' || g
            FROM generate_series(1, 40) g
            """)
        let ids: [Int64] = try await db.pool.query("SELECT id FROM siwa.accounts ORDER BY id").map { try $0.decode("id") }
        #expect(ids.count == 40)
        let absent = ids.last! + 1000
        let dense = Array(ids[5..<25].filter { $0 % 3 != 0 })   // gaps inside the span
        let scattered = [ids[0], ids[20], ids[39], absent]
        #expect(StoredTokens.denseSpan(dense) != nil && StoredTokens.denseSpan(scattered) == nil)
        for asked in [dense, scattered] {
            let tokens = try await StoredTokens.load(asked, pool: db.pool)
            #expect(Set(tokens.keys) == Set(asked).subtracting([absent]), "asked \(asked)")
            for (id, token) in tokens {
                let number = id - ids[0] + 1
                #expect(token.fingerprint == "fp-\(number)")
                if number % 5 == 0 {
                    #expect(token.ciphertext == nil && token.keyID == nil)
                } else {
                    let expected = (0..<4).map { UInt8(truncatingIfNeeded: number >> (8 * (3 - $0))) }
                    #expect(token.ciphertext == expected && token.keyID == "k1")
                }
            }
        }
        #expect(try await StoredTokens.load([], pool: db.pool).isEmpty)
        await db.drop()
    }
}
