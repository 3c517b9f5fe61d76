import Foundation
import Postgres
import SIWACrypto
import Testing
@testable import SIWAJobs

/// Issue #13: fingerprints are keyed. After a validation and a sweep through the binary, the
/// fingerprint of a known token computed with plain SHA-256 matches nothing in any view (or table)
/// of the schema, while its keyed fingerprint is what the accounts and results hold.
@Suite(.serialized) struct KeyedFingerprintTests {
    @Test func aPlainSHA256FingerprintOfAKnownTokenMatchesNothing() async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 20, revokedFraction: 0.1)
        _ = try await world.enqueue()
        let run = try await BinaryProcess.run(["work", "--drain"], environment: world.environment)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        let tokens = try #require(world.seeded?.tokens)
        let keyring = try world.keyring
        let relations = try await world.database.pool.query("""
            SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'siwa' AND c.relkind IN ('r', 'v', 'p') ORDER BY 1
            """).map { try $0.decode("name", as: String.self) }
        #expect(relations.contains("account_summary") && relations.contains("results"))
        for token in tokens.prefix(5).map(\.token) {
            let plain = Fingerprint.of(token), keyed = keyring.fingerprint(token)
            var keyedSeen = 0
            for relation in relations {
                let found: Int = try await world.database.scalar(SQL(unsafeSQL: """
                    SELECT count(*)::int FROM siwa.\(relation) r WHERE strpos(r::text, '\(plain)') > 0
                    """))
                #expect(found == 0, "\(plain) found in siwa.\(relation)")
                keyedSeen += try await world.database.scalar(SQL(unsafeSQL: """
                    SELECT count(*)::int FROM siwa.\(relation) r WHERE strpos(r::text, '\(keyed)') > 0
                    """), as: Int.self)
            }
            #expect(keyedSeen >= 2, "the keyed fingerprint \(keyed) is in the accounts and the results")
        }
        await world.tearDown()
    }
}
