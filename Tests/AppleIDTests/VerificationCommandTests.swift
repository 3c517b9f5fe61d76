import Foundation
import Testing
@testable import AppleID
import SIWACrypto

/// `TokenVerification`, the library side of `siwa-jobs token verify` (the CLI maps its outcomes
/// and failures to exit codes: CLITests and IntegrationTests/TokenVerifyCommandTests).
@Suite struct VerificationCommandTests {
    typealias F = VerificationFixtures

    private func run(_ token: String, provider: (any JWKSProvider)? = nil, clientIDs: [String] = F.clientIDs,
                     at: Date? = F.nowDate, nonce: String? = nil) async throws -> TokenVerification.Outcome {
        try await TokenVerification.run(token: token, jwks: try provider ?? F.standardProvider(), clientIDs: clientIDs, at: at,
                                        expectedNonce: nonce)
    }

    /// The failure `run` throws (nil when it returned a verdict instead).
    private func failure(_ token: String, provider: (any JWKSProvider)? = nil,
                         clientIDs: [String] = F.clientIDs) async throws -> TokenVerification.Failure? {
        do {
            _ = try await TokenVerification.run(token: token, jwks: try provider ?? F.standardProvider(), clientIDs: clientIDs,
                                                at: F.nowDate, expectedNonce: nil)
            return nil
        } catch let failure as TokenVerification.Failure {
            return failure
        }
    }

    @Test func printsNormalisedClaimsAsPrettySortedJSON() async throws {
        let events = #"{"type":"account-deleted","sub":"001.x.1","event_time":1657617063012}"#
        let claims: [String: any Sendable] = ["iss": "https://appleid.apple.com", "aud": "com.example.web", "iat": F.now,
                                              "exp": F.now + 60, "jti": "j1", "events": events]
        let token = try F.rs256(claims, key: try F.keys()[1], extraHeader: ["kid": F.kidB])
        let result = try await run("  " + token + "\n")
        guard case .verified = result else { Issue.record("not verified: \(result)"); return }
        #expect(result.text == """
        {
          "aud" : [
            "com.example.web"
          ],
          "events" : {
            "event_time" : "2022-07-12T09:11:03.012Z",
            "sub" : "001.x.1",
            "type" : "account-delete"
          },
          "exp" : 1700000060,
          "iat" : 1700000000,
          "iss" : "https://appleid.apple.com",
          "jti" : "j1"
        }
        """)
    }

    @Test func rejectionsPrintTheReasonAndDetailWithoutTheToken() async throws {
        let token = try F.rs256(F.claims(["exp": F.now - 3600]), key: try F.keys()[0])
        let result = try await run(token)
        guard case .rejected = result else { Issue.record("not rejected: \(result)"); return }
        #expect(result.text == "rejected: expired: exp 1699996400 is 3600 s before the verification time 1700000000 (leeway 60 s)")
        let forged = try F.rs256(F.idClaims(), key: try F.keys()[2])
        let bad = try await run(forged)
        #expect(bad == .rejected(JWTVerificationError(.badSignature, bad.detail)) && bad.text.hasPrefix("rejected: badSignature: "))
        #expect(!bad.text.contains(forged))
        let none = try await run("eyJhbGciOiJub25lIn0.e30.")
        #expect(none == .rejected(JWTVerificationError(.algNotAllowed, #"alg "none" is not allowed; only RS256 is accepted"#)))
        #expect(none.text == "rejected: algNotAllowed: alg \"none\" is not allowed; only RS256 is accepted")
    }

    @Test func atSetsTheVerificationTime() async throws {
        let token = try F.rs256(F.idClaims(), key: try F.keys()[0])
        #expect(try await run(token, at: Date(timeIntervalSince1970: TimeInterval(F.now + 100))).isVerified)
        #expect(try await run(token, at: Date(timeIntervalSince1970: TimeInterval(F.now + 10_000))).text.hasPrefix("rejected: expired: "))
        #expect(try await run(token, at: nil).text.hasPrefix("rejected: expired: "), "defaults to the real clock, long after the fixture time")
    }

    @Test func nonceAndAudienceOptions() async throws {
        let token = try F.rs256(F.claims(["nonce": Digest.sha256Hex("raw-nonce")]), key: try F.keys()[0])
        #expect(try await run(token, nonce: "raw-nonce").isVerified)
        #expect(try await run(token, nonce: "other").text == "rejected: nonceMismatch: nonce is neither the expected nonce nor its SHA-256 hex")
        #expect(try await run(token, clientIDs: ["com.example.web"]).text.hasPrefix("rejected: wrongAudience: aud is \"com.example.app\""))
        #expect(try await failure(token, clientIDs: []) == TokenVerification.Failure(
            .noClientID, "invalid clientIDs: at least one client id is required to check aud"))
    }

    @Test func unusableJWKSIsNotAVerdictOnTheToken() async throws {
        let token = try F.rs256(F.idClaims(), key: try F.keys()[0])
        let missing = try await failure(token, provider: FileJWKSProvider(path: "/nonexistent/keys.json"))
        #expect(missing == TokenVerification.Failure(.jwksFileUnreadable, "JWKS file: cannot read '/nonexistent/keys.json': no such file or directory"),
                "an unreadable file is missing input")
        let empty = try await failure(token, provider: StaticJWKSProvider(document: Array(#"{"keys":[]}"#.utf8)))
        #expect(empty == TokenVerification.Failure(.jwksUnavailable, "JWKS keys: no usable RSA signing key among 0"),
                "a fetched JWKS is a service problem")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("{not json".utf8).write(to: file)
        let malformed = try await failure(token, provider: FileJWKSProvider(path: file.path))
        #expect(malformed?.kind == .jwksFileInvalid && malformed?.message.hasPrefix("JWKS ") == true,
                "a malformed file is a data error: \(String(describing: malformed))")
    }

    @Test func realAppleJWKSSelectsTheTokensKid() async throws {
        let token = try F.rs256(F.idClaims(), kid: "fh6Bs8C", key: try F.keys()[0])
        let result = try await run(token, provider: StaticJWKSProvider(document: Array(AppleJWKSFixture.json.utf8)))
        #expect(result.text == "rejected: badSignature: RS256 signature does not verify with the JWKS key for kid \"fh6Bs8C\"")
        let unknown = try F.rs256(F.idClaims(), kid: "W6WcOKB", key: try F.keys()[0])
        let other = try await run(unknown, provider: StaticJWKSProvider(document: Array(AppleJWKSFixture.json.utf8)))
        #expect(!other.isVerified)
        #expect(other.text.hasPrefix("rejected: unknownKID: kid \"W6WcOKB\" not in the JWKS; known kids: AIDOPK1, fh6Bs8C"))
    }
}

private extension TokenVerification.Outcome {
    var isVerified: Bool {
        if case .verified = self { return true }
        return false
    }

    var detail: String {
        if case .rejected(let error) = self { return error.detail }
        return ""
    }
}
