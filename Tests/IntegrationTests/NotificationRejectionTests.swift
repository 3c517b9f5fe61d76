import Foundation
import Postgres
import Sandbox
import SIWACrypto
import Testing
@testable import SIWAJobs

/// Each rejection reason, through the real receiver and a real worker; and the unknown-kid rule:
/// retried with a refetch per attempt until the JWKS was fetched 10 minutes after receipt, then
/// rejected.
@Suite(.serialized, .timeLimit(.minutes(20))) struct NotificationRejectionTests {
    static let foreignKey = Result { try RSAPrivateKey.generate() }

    /// The signing key the sandbox publishes at `/auth/keys`.
    static func publishedKey(_ world: NotificationWorld) async throws -> RSAPublicKey {
        let body = try await world.admin.get("/auth/keys")
        guard let key = (body["keys"] as? [[String: Any]])?.first, let n = (key["n"] as? String).flatMap(Base64URL.decode),
              let e = (key["e"] as? String).flatMap(Base64URL.decode) else { throw TestFailure("no key in /auth/keys") }
        return try RSAPublicKey(n: n, e: e)
    }

    @Test func everyRejectionIsRecordedWithItsReason() async throws {
        let world = try await NotificationWorld.create(accounts: 2)
        let sub = world.subs[0], client = SIWAWorld.clientID
        let kid = try #require(world.sandbox.publishedKIDs.first)
        let foreign = try Self.foreignKey.get()
        let now = Int(Date().timeIntervalSince1970)
        // A long-running worker, so its JWKS cache persists between the steps.
        let worker = try BinaryProcess(["work", "--concurrency", "4"], environment: world.environment(refetchSeconds: 0))

        // 1. A valid notification loads the JWKS once.
        #expect(await world.post(try world.sign([NotificationSpec(type: "email-disabled", sub: sub, clientID: client)])) == [200: 1])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL", atLeast: 1)
        #expect(world.jwksFetches == 1)

        // 2. An unknown kid: a refetch, then a retry (Apple may publish the key late); once the JWKS
        // has been fetched 10 minutes after receipt (the receipt is moved back here) it is rejected.
        let unknown = try Forge.token(header: #"{"alg":"RS256","kid":"NOPE123"}"#, claims: Forge.claims(sub: sub, clientID: client)) {
            try foreign.signRS256($0)
        }
        #expect(await world.post([unknown]) == [200: 1])
        try await world.waitFor("""
            SELECT count(*)::int FROM siwa.job_items WHERE attempt >= 1 AND last_error LIKE 'kid not yet published%'
            """, atLeast: 1)
        #expect(world.jwksFetches >= 2, "a refetch for the unknown kid")
        try await world.database.pool.execute("""
            UPDATE siwa.notifications SET received_at = received_at - interval '20 minutes' WHERE processed_at IS NULL
            """)
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL", atLeast: 2)
        let afterUnknown = world.jwksFetches
        #expect(afterUnknown >= 3, "one more refetch on the retry")

        // 3. The other rejections need no fetch.
        // HS256 keyed with the sandbox's own RSA public key (SPKI PEM), the classic alg-confusion forgery.
        let spkiSecret = Array(try await Self.publishedKey(world).spkiPEM.utf8)
        let hs256 = Forge.token(header: #"{"alg":"HS256","kid":"\#(kid)"}"#, claims: Forge.claims(sub: sub, clientID: client)) {
            Forge.hmac(key: spkiSecret, message: $0)
        }
        let none = Forge.token(header: #"{"alg":"none","kid":"\#(kid)"}"#, claims: Forge.claims(sub: sub, clientID: client)) { _ in [] }
        let notInJWKS = try Forge.token(header: #"{"alg":"RS256","kid":"\#(kid)"}"#, claims: Forge.claims(sub: sub, clientID: client)) {
            try foreign.signRS256($0)
        }
        let huge = try Forge.token(header: #"{"alg":"RS256","kid":"\#(kid)","x5u":"\#(String(repeating: "h", count: 6000))"}"#,
                                   claims: Forge.claims(sub: sub, clientID: client)) { try foreign.signRS256($0) }
        let signed = try world.sign([
            NotificationSpec(type: "consent-revoked", sub: sub, clientID: client, iat: now - 1000, exp: now - 600),
            NotificationSpec(type: "consent-revoked", sub: sub, clientID: "com.other.app"),
            NotificationSpec(type: "consent-revoked", sub: sub, clientID: client, iss: "https://evil.example.com"),
            NotificationSpec(type: "consent-revoked", sub: sub, clientID: client),
            NotificationSpec(type: "consent-revoked", sub: "000999.unknownsub.0001", clientID: client),
        ])
        let truncated = String(signed[3].dropLast(20))
        let cases: [(String, String)] = [
            (none, "algNotAllowed"), (hs256, "algNotAllowed"), (notInJWKS, "badSignature"), (huge, "malformed"),
            (signed[0], "expired"), (signed[1], "wrongAudience"), (signed[2], "wrongIssuer"), (truncated, "malformed"),
        ]
        #expect(await world.post(cases.map(\.0) + [signed[4]], concurrency: 1) == [200: cases.count + 1])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL", atLeast: 2 + cases.count + 1)
        worker.signal(SIGTERM)
        _ = await worker.wait()
        #expect(world.jwksFetches == afterUnknown + 1, "no rejection besides the unknown kid fetched the JWKS (the test read it once)")

        let rows = try await world.database.pool.withConnection { conn in
            try await conn.query("""
                SELECT n.id, n.verification, n.outcome, n.rejection_reason, n.rejection_detail, n.error,
                       (SELECT count(*) FROM siwa.audit_log l WHERE (l.detail->>'notification_id')::bigint = n.id)::int AS audits
                FROM siwa.notifications n ORDER BY n.id
                """)
        }
        #expect(rows.count == cases.count + 3)
        let reasons = try rows.map { try $0.decode("rejection_reason", as: String?.self) }
        let details = try rows.map { try $0.decode("rejection_detail", as: String?.self) }
        let outcomes = try rows.map { try $0.decode("outcome", as: String?.self) }
        #expect(outcomes[0] == "applied" && reasons[0] == nil)
        #expect(outcomes[1] == "unverifiable" && reasons[1] == "unknownKID", "\(reasons[1] ?? "")")
        #expect(details[1]?.hasPrefix("kid \"NOPE123\" not in the JWKS") == true, "\(details[1] ?? "")")
        for (i, expected) in cases.map(\.1).enumerated() {
            #expect(outcomes[i + 2] == "unverifiable", "case \(i)")
            // The stored reason is the code alone: no attacker text (alg, kid) in it.
            #expect(reasons[i + 2] == expected, "case \(i): \(reasons[i + 2] ?? "nil")")
            #expect((details[i + 2]?.count ?? 0) > 0 && (details[i + 2]?.count ?? 0) <= 300, "case \(i): \(details[i + 2] ?? "nil")")
        }
        #expect(outcomes.last == "unknown_sub")
        #expect(try rows.allSatisfy { try $0.decode("audits", as: Int.self) == 1 }, "one audit row per notification")
        let untouched: Int = try await world.database.scalar("""
            SELECT count(*)::int FROM siwa.accounts WHERE consent_revoked_at IS NULL AND refresh_token_ciphertext IS NOT NULL
            """)
        #expect(untouched == 2, "no rejected notification changed an account")
        let failed: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE outcome = 'unverifiable'")
        #expect(failed == cases.count + 1)
        await world.tearDown()
    }
}
