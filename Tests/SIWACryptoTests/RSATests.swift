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
}
