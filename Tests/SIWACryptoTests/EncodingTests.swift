import Foundation
import Testing
@testable import SIWACrypto

@Suite struct EncodingTests {
    @Test func base64URLMatchesFoundationForEveryLength() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            let encoded = Base64URL.encode(bytes)
            #expect(encoded == expected)
            #expect(Base64URL.decode(encoded) == bytes)
        }
    }

    @Test func base64URLDecodeToleratesPaddingAndRejectsJunk() {
        #expect(Base64URL.decode("_-8") == [0xFF, 0xEF])
        #expect(Base64URL.decode("_-8=") == [0xFF, 0xEF])
        #expect(Base64URL.decode("AA==") == [0])
        #expect(Base64URL.decode("A") == nil)          // impossible length
        #expect(Base64URL.decode("AA=") == nil)        // padding to a non-multiple of 4
        #expect(Base64URL.decode("+/8") == nil)        // standard alphabet is not base64url
        #expect(Base64URL.decode("AA AA") == nil)      // whitespace
        #expect(Base64URL.decode("AA===") == nil)
        #expect(Base64URL.decode("") == [])
    }

    @Test func sha256KnownAnswers() {
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digest.sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Digest.sha256(Array("abc".utf8)).count == 32)
    }

    @Test func fingerprintIsPrefixOfDigestAndHidesSecret() {
        let secret = "r1234.0.abcdefSECRET"
        let fp = Fingerprint.of(secret)
        #expect(fp == "sha256:" + Digest.sha256Hex(secret).prefix(16))
        #expect(fp.count == 7 + 16)
        #expect(!fp.contains("SECRET"))
        #expect(Fingerprint.of(secret + "x") != fp)
    }

    @Test func secureRandomLengthsAndVariety() {
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(-3).isEmpty)
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test func hexRoundTrip() {
        #expect(Hex.encode([0x00, 0xAB, 0xFF]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xAB, 0xFF])
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode("abc") == nil)
    }
}
