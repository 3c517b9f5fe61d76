import Foundation
import Testing
@testable import AppleID
import SIWACrypto

@Suite struct VerificationJWKSetTests {
    @Test func parsesApplesRealJWKSAndSelectsByKid() throws {
        let set = try JWKSet.parse(Array(AppleJWKSFixture.json.utf8))
        #expect(set.kids == ["AIDOPK1", "fh6Bs8C"])
        #expect(set.skipped.isEmpty)
        let fh6 = try #require(set.key(kid: "fh6Bs8C"))
        let aido = try #require(set.key(kid: "AIDOPK1"))
        #expect(Base64URL.encode(fh6.n).hasPrefix("u704gotMSZc6CSSVNCZ1d0S9"))
        #expect(Base64URL.encode(aido.n).hasPrefix("lxrwmuYSAsTfn-lUu4goZSXB"))
        #expect(fh6.n.count == 256 && fh6.e == [1, 0, 1])
        #expect(set.key(kid: "W6WcOKB") == nil)
        #expect(set.key(kid: "fh6bs8c") == nil, "kid matching is case-sensitive")
    }

    @Test func ignoresNonRSAKeysAndAcceptsAnyKidLength() throws {
        let key = try VerificationFixtures.keys()[0].publicKey
        let n = Base64URL.encode(key.n)
        let json = #"""
        {"keys":[
          {"kty":"EC","kid":"ec1","crv":"P-256","x":"AAAA","y":"AAAA"},
          {"kty":"oct","kid":"sym","k":"c2VjcmV0"},
          {"kty":"RSA","kid":"x","n":"\#(n)","e":"AQAB"},
          {"kty":"RSA","kid":"a-rather-long-key-identifier-of-40-chars!","use":"sig","alg":"RS256","n":"\#(n)","e":"AQAB"}
        ]}
        """#
        let set = try JWKSet.parse(Array(json.utf8))
        #expect(set.kids == ["x", "a-rather-long-key-identifier-of-40-chars!"])
        #expect(set.skipped.isEmpty, "non-RSA keys are ignored, not reported")
        #expect(set.key(kid: "ec1") == nil)
    }

    @Test func skipsUnusableRSAKeysAndSaysWhy() throws {
        let n = Base64URL.encode(try VerificationFixtures.keys()[0].publicKey.n)
        let short = Base64URL.encode([UInt8](repeating: 0xC3, count: 128))
        let json = #"""
        {"keys":[
          {"kty":"RSA","kid":"good","n":"\#(n)","e":"AQAB"},
          {"kty":"RSA","kid":"good","n":"\#(n)","e":"AQAB"},
          {"kty":"RSA","n":"\#(n)","e":"AQAB"},
          {"kty":"RSA","kid":"enc","use":"enc","n":"\#(n)","e":"AQAB"},
          {"kty":"RSA","kid":"rs512","alg":"RS512","n":"\#(n)","e":"AQAB"},
          {"kty":"RSA","kid":"b64","n":"not+base64/url","e":"AQAB"},
          {"kty":"RSA","kid":"noe","n":"\#(n)"},
          {"kty":"RSA","kid":"small","n":"\#(short)","e":"AQAB"},
          "junk"
        ]}
        """#
        let set = try JWKSet.parse(Array(json.utf8))
        #expect(set.kids == ["good"])
        let expected = [
            "keys[1] (kid \"good\"): duplicate kid",
            "keys[2]: kid missing",
            "keys[3] (kid \"enc\"): use is not \"sig\"",
            "keys[4] (kid \"rs512\"): alg is not \"RS256\"",
            "keys[5] (kid \"b64\"): n missing or not base64url",
            "keys[6] (kid \"noe\"): e missing",
            "keys[7] (kid \"small\"): RSA modulus must be",
            "keys[8]: expected an object",
        ]
        #expect(set.skipped.count == expected.count)
        for (line, prefix) in zip(set.skipped, expected) {
            #expect(line.hasPrefix(prefix), "\(line)")
        }
    }

    @Test(arguments: [
        ("", "json", "not a JSON object"),
        ("[1,2]", "json", "not a JSON object"),
        (#"{"keyz":[]}"#, "keys", "missing"),
        (#"{"keys":{"kty":"RSA"}}"#, "keys", "expected an array, got an object"),
        (#"{"keys":[]}"#, "keys", "no usable RSA signing key among 0"),
        (#"{"keys":[{"kty":"EC","kid":"e"}]}"#, "keys", "no usable RSA signing key among 1"),
        (#"{"keys":[{"kty":"RSA","kid":"k","n":"AQAB","e":"AQAB"}]}"#, "keys", "RSA modulus must be"),
    ])
    func rejectsUnusableDocumentsNamingTheField(_ json: String, _ field: String, _ message: String) {
        #expect {
            _ = try JWKSet.parse(Array(json.utf8))
        } throws: { error in
            guard let error = error as? JWKSError else { return false }
            return error.field == field && error.message.contains(message)
        }
    }

    @Test func rejectsOversizedDocuments() {
        let padding = String(repeating: " ", count: JWKSet.maxDocumentBytes)
        #expect(throws: JWKSError(field: "json", message: "document is \(JWKSet.maxDocumentBytes + 11) bytes; the limit is \(JWKSet.maxDocumentBytes)")) {
            _ = try JWKSet.parse(Array(#"{"keys":[]}"#.utf8) + Array(padding.utf8))
        }
    }

    @Test func fileProviderReadsTheDocumentAndNamesAMissingFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-jwks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("keys.json").path
        try Data(AppleJWKSFixture.json.utf8).write(to: URL(fileURLWithPath: path))
        let bytes = try await FileJWKSProvider(path: path).fetch()
        #expect(try JWKSet.parse(bytes).kids == ["AIDOPK1", "fh6Bs8C"])
        await #expect(throws: JWKSError(field: "file", message: "cannot read '\(path).missing': no such file or directory")) {
            _ = try await FileJWKSProvider(path: path + ".missing").fetch()
        }
    }

    // The HTTP providers (`JWKSProviders.apple`, `.url`) are tested against the sandbox's
    // /auth/keys over real HTTP: IntegrationTests/JWKSProviderTests.
}

/// End to end on Apple's own data: a real id_token against the real JWKS.
@Suite struct VerificationRealAppleTokenTests {
    private func verifier() throws -> JWTVerifier {
        let cache = JWKSCache(provider: StaticJWKSProvider(document: Array(AppleJWKSFixture.json.utf8)))
        return try JWTVerifier(keys: cache, clientIDs: [AppleIDTokenFixture.clientID])
    }

    @Test func realAppleIDTokenVerifiesWithTheRealJWKS() async throws {
        let at = Date(timeIntervalSince1970: TimeInterval(AppleIDTokenFixture.iat + 1))
        let claims = try await verifier().verify(AppleIDTokenFixture.token, at: at)
        #expect(claims.sub == "000723.25da8be332964991898630947202fef0.0402")
        #expect(claims.exp - (claims.iat ?? 0) == 600)
    }

    @Test func realTokenIsRejectedOnceExpiredOrWithOneBitFlipped() async throws {
        let verifier = try verifier()
        #expect(await verifier.rejection(AppleIDTokenFixture.token)?.reason == .expired)
        var bytes = Array(AppleIDTokenFixture.token.utf8)
        let index = bytes.count - 40
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let at = Date(timeIntervalSince1970: TimeInterval(AppleIDTokenFixture.iat + 1))
        #expect(await verifier.rejection(String(decoding: bytes, as: UTF8.self), at: at)?.reason == .badSignature)
    }
}
