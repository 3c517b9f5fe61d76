import Testing
@testable import SIWACrypto

/// Keyed fingerprints: HMAC-SHA256 as RFC 4231 gives it, and a fingerprint nobody can compute
/// without the key.
@Suite struct FingerprintKeyTests {
    @Test func hmacSHA256MatchesRFC4231TestCases() {
        // RFC 4231 §4.2 (test case 1) and §4.3 (test case 2).
        #expect(Hex.encode(HMACSHA256.mac(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(Hex.encode(HMACSHA256.mac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aFingerprintDependsOnTheKeyAndIsNotThePlainHash() throws {
        let a = try FingerprintKey(key: SecureRandom.bytes(32)), b = try FingerprintKey(key: SecureRandom.bytes(32))
        let token = "r" + Hex.encode(SecureRandom.bytes(16))
        #expect(a.of(token).hasPrefix("hmac:") && a.of(token).count == 21)
        #expect(a.of(token) == a.of(token) && a.of(token) != b.of(token))
        #expect(!a.of(token).hasSuffix(String(Fingerprint.of(token).dropFirst(7))))
        #expect(throws: CryptoError.self) { try FingerprintKey(key: [1, 2, 3]) }
        #expect("\(a)" == "FingerprintKey(<redacted>)")
        let cipher = try TokenCipher(keyID: "k1", key: SecureRandom.bytes(32))
        #expect(FingerprintKey(derivedFrom: cipher).of(token) == FingerprintKey(derivedFrom: cipher).of(token))
    }
}
