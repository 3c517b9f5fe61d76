import Testing
@testable import SIWACrypto

@Suite struct RSATests {
    let message = Array("header.payload".utf8)

    @Test func rs256SignVerifyAndJWKRoundTrip() throws {
        let key = try RSAPrivateKey(pem: TestKeys.rsaPKCS8)
        let signature = try key.signRS256(message)
        #expect(signature.count == 256)
        let pub = key.publicKey
        #expect(pub.e == [1, 0, 1])
        #expect(pub.n.count == 256)
        #expect(pub.verifyRS256(signature: signature, message: message))
        let fromJWK = try RSAPublicKey(n: pub.n, e: pub.e)
        #expect(fromJWK.verifyRS256(signature: signature, message: message))
        #expect(try RSAPublicKey(n: [0] + pub.n, e: pub.e).verifyRS256(signature: signature, message: message))
        var bad = signature
        bad[0] ^= 0x80
        #expect(!fromJWK.verifyRS256(signature: bad, message: message))
        #expect(!fromJWK.verifyRS256(signature: signature, message: message + [1]))
        #expect(!fromJWK.verifyRS256(signature: [], message: message))
    }

    @Test func generatedKeyPEMRoundTripsAndPKCS1Loads() throws {
        let key = try RSAPrivateKey.generate(bits: 2048)
        let again = try RSAPrivateKey(pem: key.pkcs8PEM)
        #expect(again.publicKey.n == key.publicKey.n)
        #expect(try RSAPrivateKey(pem: TestKeys.rsaPKCS1).publicKey.n == RSAPrivateKey(pem: TestKeys.rsaPKCS8).publicKey.n)
        #expect(try RSAPublicKey(pem: key.publicKey.spkiPEM).n == key.publicKey.n)
    }

    @Test func rejectsWrongKeysAndSizes() {
        #expect(throws: CryptoError(code: "key.not_rsa", message: "the key is not an RSA key")) {
            try RSAPrivateKey(pem: TestKeys.p256PKCS8)
        }
        #expect(throws: CryptoError.self) { try RSAPrivateKey.generate(bits: 1024) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(n: [1, 2, 3], e: [1, 0, 1]) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(n: [UInt8](repeating: 0xC3, count: 256), e: []) }
    }

    @Test func rejectsPublicExponentsThatAreEvenOrBelow65537() throws {
        let n = try RSAPrivateKey.generate(bits: 2048).publicKey.n
        let refusal = CryptoError(code: "key.invalid", message: "RSA public exponent must be odd and at least 65537")
        for e: [UInt8] in [[3], [1], [0, 0, 3], [1, 0, 0], [0xFF, 0xFF], [1, 0, 2]] {
            #expect(throws: refusal, "e = \(e)") { try RSAPublicKey(n: n, e: e) }
        }
        #expect(try RSAPublicKey(n: n, e: [1, 0, 1]).e == [1, 0, 1])
        #expect(throws: Never.self) { try RSAPublicKey(n: n, e: [0, 1, 0, 0, 1]) }   // 2^24 + 1, leading zero
    }
}
