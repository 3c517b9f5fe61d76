import Testing
@testable import SIWACrypto

@Suite struct TokenCipherTests {
    let key = (0..<32).map { UInt8($0) }

    @Test func sealOpenRoundTripWithAAD() throws {
        let cipher = try TokenCipher(keyID: "k1", key: key)
        let token = "r7f2c.0.abc+/=&é"
        let sealed = try cipher.seal(token, aad: Array("account-42".utf8))
        #expect(sealed.count == token.utf8.count + 28)
        #expect(try cipher.open(sealed, aad: Array("account-42".utf8)) == token)
        #expect(try cipher.open(try cipher.seal("")) == "")
        // random nonce: sealing twice differs
        #expect(try cipher.seal(token) != cipher.seal(token))
    }

    @Test func tamperWrongAADAndWrongKeyFail() throws {
        let cipher = try TokenCipher(keyID: "k1", key: key)
        let sealed = try cipher.seal("refresh-token", aad: [1])
        for index in [0, 12, sealed.count - 1] {
            var bad = sealed
            bad[index] ^= 0x01
            #expect(throws: CryptoError.self) { try cipher.open(bad, aad: [1]) }
        }
        #expect(throws: CryptoError.self) { try cipher.open(sealed, aad: [2]) }
        #expect(throws: CryptoError.self) { try cipher.open(sealed) }
        let other = try TokenCipher(keyID: "k2", key: key.reversed())
        #expect(throws: CryptoError.self) { try other.open(sealed, aad: [1]) }
        #expect(throws: CryptoError.self) { try cipher.open(Array(sealed.prefix(27))) }
    }

    /// Opens reuse decryption contexts (`GCMDecryptors`): a context that just failed (a wrong
    /// AAD, a tampered tag) or decrypted another value must open the next one correctly, each
    /// with its own nonce, AAD and length, in any order and from many threads at once.
    @Test func reusedContextsOpenEveryValueAfterFailuresAndInParallel() async throws {
        let cipher = try TokenCipher(keyID: "k1", key: key)
        let values = (0..<40).map { i in (String(repeating: "t\(i).", count: i % 7 + 1), Array("account-\(i)".utf8)) }
        let sealed = try values.map { try cipher.seal($0.0, aad: $0.1) }
        for (index, value) in values.enumerated() {
            #expect(throws: CryptoError.self) { try cipher.open(sealed[index], aad: Array("account-x".utf8)) }
            var tampered = sealed[index]
            tampered[tampered.count - 1] ^= 0x80
            #expect(throws: CryptoError.self) { try cipher.open(tampered, aad: value.1) }
            #expect(try cipher.open(sealed[index], aad: value.1) == value.0)
        }
        let opened = try await withThrowingTaskGroup(of: Bool.self) { group in
            for round in 0..<400 {
                let index = round % values.count
                group.addTask { try cipher.open(sealed[index], aad: values[index].1) == values[index].0 }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(opened == 400)
    }

    @Test func encodedKeysHexAndBase64() throws {
        let hex = key.map { String(format: "%02x", $0) }.joined()
        let fromHex = try TokenCipher(keyID: "k", encodedKey: "  \(hex.uppercased())\n")
        let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        let fromBase64 = try TokenCipher(keyID: "k", encodedKey: b64 + "\n")
        let fromBase64URL = try TokenCipher(keyID: "k", encodedKey: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
        let sealed = try fromHex.seal("x")
        #expect(try fromBase64.open(sealed) == "x")
        #expect(try fromBase64URL.open(sealed) == "x")
        #expect(throws: CryptoError.self) { try TokenCipher(keyID: "k", encodedKey: "abcd") }
        #expect(throws: CryptoError.self) { try TokenCipher(keyID: "k", encodedKey: "not a key at all!") }
        #expect(throws: CryptoError.self) { try TokenCipher(keyID: "", key: key) }
        #expect(throws: CryptoError.self) { try TokenCipher(keyID: "k", key: Array(key.prefix(16))) }
    }

    @Test func descriptionHidesKey() throws {
        let cipher = try TokenCipher(keyID: "k1", key: [UInt8](repeating: 0xAB, count: 32))
        #expect(String(describing: cipher) == "TokenCipher(keyID: k1)")
        #expect(!String(reflecting: cipher).contains("171"))
        var dumped = ""
        dump(cipher, to: &dumped)
        #expect(!dumped.contains("171"))
    }
}
